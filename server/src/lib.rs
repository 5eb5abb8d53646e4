//! stepwise: a coding agent that keeps its plan in sight.
//!
//! The engine (`agent`, `plan`, `tools`, `llm`) knows nothing of terminals or editors; it reaches the
//! world through two seams: [`host::Host`] (files and commands) and [`events::EventSink`] (what happened).
//! `cli`, `lsp` and `acp` are the three implementations of those seams; `store` keeps sessions on disk.

pub mod acp;
pub mod agent;
pub mod background;
pub mod checkpoint;
pub mod cli;
pub mod config;
pub mod context;
pub mod events;
pub mod host;
pub mod ignore_files;
pub mod images;
pub mod instructions;
pub mod intel;
/// Model providers: their own crate (server/llm), which uses nothing else of stepwise and builds apart.
pub use stepwise_llm as llm;
pub mod locks;
pub mod lsp;
pub mod mcp;
pub mod plan;
pub mod prune;
pub mod sandbox;
pub mod session;
pub mod sessions;
pub mod skills;
pub mod snapshot;
pub mod steering;
pub mod store;
pub mod subagents;
pub mod text_file;
pub mod time;
pub mod tools;
pub mod transcript;
pub mod trust;
pub mod workspace;
