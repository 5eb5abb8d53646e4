//! The real `stepwise` binary, built once per process.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;

use serde_json::Value;

/// The path of the `stepwise` binary, built once per process with `cargo build -p stepwise`
/// (`--release` when asked). `STEPWISE_BIN` names a prebuilt binary instead.
pub fn stepwise_binary(release: bool) -> PathBuf {
    static DEBUG: OnceLock<PathBuf> = OnceLock::new();
    static RELEASE: OnceLock<PathBuf> = OnceLock::new();
    if let Some(p) = std::env::var_os("STEPWISE_BIN") {
        return PathBuf::from(p);
    }
    let cell = if release { &RELEASE } else { &DEBUG };
    cell.get_or_init(|| build_binary(release)).clone()
}

pub(crate) fn build_binary(release: bool) -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../server/Cargo.toml");
    let mut cmd = std::process::Command::new(cargo);
    cmd.args(["build", "--quiet", "--message-format=json", "--bin", "stepwise", "--manifest-path"]).arg(&manifest);
    if release {
        cmd.arg("--release");
    }
    let out = cmd.stderr(Stdio::inherit()).output().expect("cannot run cargo to build the stepwise binary");
    assert!(out.status.success(), "cargo build of the stepwise binary failed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    for line in stdout.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
        if v["reason"] == "compiler-artifact" && v["target"]["name"] == "stepwise" {
            if let Some(exe) = v["executable"].as_str() {
                return PathBuf::from(exe);
            }
        }
    }
    panic!("cargo build did not report the stepwise executable");
}
