//! The sandbox shell commands run in: what a command may write and reach, decided here for every OS and
//! applied by the guard just before the command starts (`landlock.rs` on Linux, `seatbelt.rs` on macOS),
//! so stepwise itself is never confined.
//!
//! The policy: reading is allowed everywhere; writing beneath the workspace (its top level included),
//! in a private temporary folder (`TMPDIR`, where the tools' caches go too) and in the folders the user
//! lists in `sandboxWritable`; with the network off, no TCP connection or listening port.
//!
//! The protected paths beneath the workspace (`keep/rules.rs`: git's hooks and config, `.env*`,
//! `.vscode/`, `AGENTS.md`, ...) cannot be denied by Landlock, which only grants, and has nothing to
//! hang a rule on for a name that does not exist yet. So they are kept by the keeper (`keep/`): after
//! each sandboxed command it puts back whatever protected path the command created, changed or removed,
//! and the result says so. Seatbelt (macOS) can deny by name, and does, before the keeper.
//!
//! A room of its own, as Codex keeps its sandboxes apart from its exec: the host's shell runner, guard and
//! detached commands, the tools, the background tasks and the language servers' rights use it through
//! the names below and nothing else; it uses nothing of the host (the guard imposes what is made here).

mod keep;
#[cfg(target_os = "linux")]
mod landlock;
#[cfg(target_os = "linux")]
mod netns;
mod policy;
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
mod seatbelt;
mod session;
mod settings;
mod stops;
mod trial;

pub use keep::{kept, note as put_back_note, Keeper, PutBack};
pub use policy::{KeeperRef, NetRef, Policy};
pub use session::{network_isolation, Report, Sandbox, NO_NETNS_ENV};
pub use settings::{NetworkSetting, SandboxMode, SandboxSettings, Writable};
pub use stops::{stopped, stopped_note, Escalation, Stop};
pub use trial::{availability, expected, failed_where_expected, known, TRIAL_FAILS_ENV, UNAVAILABLE_ENV};

/// What an inotify watch of a folder reports (the keeper's, and the checkpoints' watch).
#[cfg(target_os = "linux")]
pub(crate) use keep::watch::mask as watch_mask;
/// What the guard imposes in the forked child, just before the command starts (Linux): the ruleset made
/// for a policy and its imposing; the session's network namespace joined first.
#[cfg(target_os = "linux")]
pub(crate) use landlock::{restrict as landlock_restrict, ruleset as landlock_ruleset};
/// Whether a private network namespace can be made here, and how.
#[cfg(target_os = "linux")]
pub use netns::availability as netns_availability;
#[cfg(target_os = "linux")]
pub(crate) use netns::join as join_netns;
/// macOS: the guard's command line run inside the policy's Seatbelt profile.
#[cfg(target_os = "macos")]
pub(crate) use seatbelt::wrap as seatbelt_wrap;
