//! Whether shell commands can be confined here: the trial (a real command confined once per process and
//! network setting), what is known of it before it answers, and the memory of a trial that failed where
//! the kernel promised the sandbox, so that the next process does not count on it again.

use std::sync::OnceLock;

/// Whether commands can be confined here, and by what (`Ok("Landlock ABI 7")`), or why not. Checked
/// once per process and network setting by confining a real command (a fork, an exec and a wait: about
/// 1.5 ms); a caller that can go on without the answer asks `known`, `expected` or `unavailable_later`.
pub fn availability(network: bool) -> Result<String, String> {
    cell(network).get_or_init(|| pretended().or_else(trial_fails).unwrap_or_else(|| probe(network))).clone()
}

/// The answer of `availability` if it is known already, without waiting for the trial.
pub fn known(network: bool) -> Option<Result<String, String>> {
    if let Some(pretend) = pretended() {
        return Some(pretend);
    }
    if trial_fails().is_some() {
        return None;
    }
    cell(network).get().cloned()
}

/// Whether the sandbox can be counted on before its trial answers: the kernel offers what it needs (one
/// syscall) and no trial failed on this kernel where it was counted on before. A caller that decides on
/// this (the language servers' rights, before the first model request) must settle again on
/// `availability`: in the rare container that refuses a confinement the kernel offers, the trial fails;
/// the caller then tells `failed_where_expected`, so the next process waits for the trial instead.
pub fn expected(network: bool) -> bool {
    pretended().is_none() && promised(network) && !crate::trust::is_recorded(FAILED, &failure_key(network))
}

fn cell(network: bool) -> &'static OnceLock<Result<String, String>> {
    static WITH: OnceLock<Result<String, String>> = OnceLock::new();
    static WITHOUT: OnceLock<Result<String, String>> = OnceLock::new();
    if network {
        &WITH
    } else {
        &WITHOUT
    }
}

/// In a debug build, `1` makes the sandbox unavailable, as on an old kernel.
pub const UNAVAILABLE_ENV: &str = "STEPWISE_TEST_NO_SANDBOX";

/// In a debug build, `1` makes the trial fail where the kernel offers Landlock (as a container refusing
/// the confinement does) and keeps its answer from `known`, as while it still runs: the tests of what
/// was decided before it answered.
pub const TRIAL_FAILS_ENV: &str = "STEPWISE_TEST_TRIAL_FAILS";

/// Debug builds only: lets the tests see a machine without a sandbox (the fallback to asking).
fn pretended() -> Option<Result<String, String>> {
    #[cfg(debug_assertions)]
    if std::env::var_os(UNAVAILABLE_ENV).is_some_and(|v| v == "1") {
        return Some(Err(format!("{UNAVAILABLE_ENV}=1 (a debug build pretending there is none)")));
    }
    None
}

/// Debug builds only: the failed trial of `TRIAL_FAILS_ENV`.
fn trial_fails() -> Option<Result<String, String>> {
    #[cfg(debug_assertions)]
    if std::env::var_os(TRIAL_FAILS_ENV).is_some_and(|v| v == "1") {
        return Some(Err(format!("the trial command was refused ({TRIAL_FAILS_ENV}=1, a debug build pretending)")));
    }
    None
}

/// The list of kernels (release and network setting) on which a trial failed although `promised`.
const FAILED: &str = "sandbox-trials-failed";

fn failure_key(network: bool) -> String {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("{}\tnetwork {network}", release.trim())
}

/// A trial `expected` to pass failed: remembered (the state directory's `sandbox-trials-failed`, once).
pub fn failed_where_expected(network: bool) {
    if !expected(network) {
        return;
    }
    if let Err(e) = crate::trust::record(FAILED, &failure_key(network)) {
        tracing::debug!("sandbox: could not remember the failed trial: {e}");
    }
}

#[cfg(target_os = "linux")]
fn promised(network: bool) -> bool {
    super::landlock::promised(network).is_ok()
}

#[cfg(not(target_os = "linux"))]
fn promised(_network: bool) -> bool {
    false
}

#[cfg(target_os = "linux")]
fn probe(network: bool) -> Result<String, String> {
    super::landlock::probe(network)
}

#[cfg(target_os = "macos")]
fn probe(_network: bool) -> Result<String, String> {
    match std::path::Path::new(super::seatbelt::SANDBOX_EXEC).exists() {
        true => Ok("Seatbelt".into()),
        false => Err(format!("{} is missing", super::seatbelt::SANDBOX_EXEC)),
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn probe(_network: bool) -> Result<String, String> {
    Err("stepwise has no sandbox for this operating system".into())
}
