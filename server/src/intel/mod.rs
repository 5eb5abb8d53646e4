//! Code intelligence: what the language servers know, for the agent. `source.rs` is the seam (the
//! `Intelligence` trait a session's host offers through `Host::intelligence`); the rest of the room turns
//! its answers into the texts the model reads.

pub mod source;

pub use source::{Answer, Checked, DiagnosticsRequest, FileDiagnostics, Intelligence, Query, Source, Written};
