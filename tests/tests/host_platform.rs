//! The host's two implementations (server/src/host/platform.rs): Linux's own (openat2, a child subreaper,
//! the parent-death signal) and the portable one macOS runs (an `O_NOFOLLOW` walk, a watchdog pipe,
//! escaped commands found by their marker). A debug build on Linux takes the portable one with
//! `STEPWISE_PORTABLE_HOST=1`; the last test here runs the confinement, race, shell and kill -9 tests
//! again that way, so the macOS code paths are tested on every run.

mod common;

use std::path::Path;
use std::time::Duration;

use common::*;
use stepwise::host::{run_shell, PORTABLE_ENV};

fn portable() -> bool {
    std::env::var(PORTABLE_ENV).is_ok_and(|v| v == "1")
}

/// Which paths run is visible from the command. Linux: the command's shell is the only child of the
/// guard, a forked copy of stepwise (here the test binary) that runs no program of its own. Portable: the
/// command runs in a subshell of a bash guard (so `$$` is the guard), whose second child is the watchdog
/// reading the pipe stepwise holds.
#[tokio::test]
async fn the_guard_runs_the_selected_paths() {
    let ws = TempDir::new("platform-guard");
    let command = r#"p=$(cut -d' ' -f4 /proc/$$/stat); echo "$$ $p $(readlink /proc/$p/exe)"
        echo $(cat /proc/$p/task/$p/children); echo $(cat /proc/$$/task/$$/children)"#;
    let out = run_shell(ws.path(), command, Duration::from_secs(10)).await.unwrap();
    assert!(!out.is_error, "{}", out.text);
    let lines: Vec<&str> = out.text.lines().collect();
    let [ids, parents_children, own_children] = lines[..] else { panic!("unexpected output: {}", out.text) };
    let ids: Vec<&str> = ids.split_whitespace().collect();
    if portable() {
        assert_eq!(own_children.split_whitespace().count(), 2, "the guard's children: {own_children}");
    } else {
        assert_eq!(parents_children, ids[0], "the command is the guard's only child");
        let me = std::env::current_exe().unwrap().canonicalize().unwrap();
        assert_eq!(Path::new(ids[2]), me, "the guard is a forked copy of this process (no program of its own)");
    }
}

/// Linux's own paths find escaped processes through the process tree (the guard is a child subreaper),
/// not their environment: one that clears it and leaves its session still dies with the command. (The
/// portable paths rely on the marker in the environment, so this test is not run on them: there such a
/// process is not found, and as it holds the output pipes the command ends at its time-out.)
#[tokio::test]
async fn an_escaped_child_without_the_marker_dies_with_the_command() {
    let ws = TempDir::new("platform-subreaper");
    // Its own session, an empty environment, its parent gone; the command ends once it is sleeping.
    let command = r#"s=$(command -v setsid) z=$(command -v sleep); (env -i "$s" "$z" 300 & echo $! > escaped.pid)
        p=$(cat escaped.pid); until grep -q '(sleep)' /proc/$p/stat; do :; done; echo started"#;
    let out = run_shell(ws.path(), command, Duration::from_secs(10)).await.unwrap();
    assert_eq!(out.text, "started");
    let pid = read_pid(&ws.join("escaped.pid"));
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(stat.contains("(sleep)"), "{pid} is not the escaped sleep: {stat}");
    assert!(wait_gone(pid), "an escaped child {pid} without the marker outlived its command");
}

/// Linux's guard is a fork of stepwise, sharing its memory until one side writes a page: it lets go of its
/// copy, so what stepwise writes while a command runs does not leave the old pages with the guard (they
/// did: 31 MB here). A command that runs on past its first moments (the guard lets go then; a quick one's
/// guard is killed first) waits until stepwise has written 32 MB, then until its guard holds less than
/// 8 MB of anonymous memory; a guard that kept its copy would hold the command to its time-out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guard_keeps_no_copy_of_what_stepwise_writes_meanwhile() {
    use std::io::Write;
    let ws = TempDir::new("platform-guard-memory");
    let fifo = ws.join("go");
    let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    let mut memory = vec![1u8; 32 << 20];
    memory.fill(1); // every page present before the fork, so shared with the guard
    let root = ws.path().to_path_buf();
    let command = tokio::spawn(async move {
        let measure = "read -r _ < go; g=/proc/$PPID/smaps_rollup
            until [ \"$(awk '/^Pss_Anon/ {print $2}' $g)\" -lt 8192 ]; do :; done; grep -E '^Pss_Anon' $g";
        run_shell(&root, measure, Duration::from_secs(10)).await
    });
    // Opening the fifo waits for the command to open it: the guard has forked by then.
    let open = move || std::fs::OpenOptions::new().write(true).open(fifo);
    let mut go = tokio::task::spawn_blocking(open).await.unwrap().unwrap();
    memory.fill(2); // every page written: one side of the fork gets a copy
    go.write_all(b"go\n").unwrap();
    drop(go);
    let out = command.await.unwrap().unwrap();
    assert!(!out.is_error, "{}", out.text);
    let kb: u64 = out.text.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect(&out.text);
    assert!(kb < 8 * 1024, "the guard holds {kb} kB of anonymous memory");
    assert!(memory.iter().step_by(4096).all(|&b| b == 2));
}

/// The tests that hold the host's guarantees, by name, and how many there are.
const PORTABLE_RUN: &[(&str, &[&str])] = &[
    (
        "core_confinement",
        &[
            "a_directory_swapped_for_a_symlink_never_leads_outside",
            "a_path_checked_before_a_swap_is_refused_after_it",
            "a_fifo_is_refused_not_waited_on",
            "a_hard_link_is_not_written_through",
            "new_directories_are_created_beneath_the_workspace",
        ],
    ),
    (
        "core_tools",
        &[
            "shell_results",
            "endless_output_is_bounded_and_stopped",
            "escaped_children_die_with_the_command",
            "shell_timeout_leaves_no_process_behind",
        ],
    ),
    ("cli", &["a_killed_stepwise_leaves_no_command_running"]),
    // The portable guard imposes the same Landlock ruleset in its `pre_exec` (on macOS it is wrapped in
    // Seatbelt instead).
    (
        "host_sandbox",
        &[
            "a_new_env_file_does_not_outlive_the_command",
            "a_double_forked_child_writing_later_is_still_confined",
            "the_hosts_listener_cannot_be_reached_from_inside",
            "the_sessions_commands_share_a_private_loopback",
            "writes_inside_the_workspace_and_tmpdir_work",
        ],
    ),
    ("host_platform", &["the_guard_runs_the_selected_paths"]),
];

#[test]
fn the_portable_paths_pass_the_same_tests() {
    // <target>/<profile>/deps/<this test>: the same target directory and profile.
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let target_dir = profile_dir.parent().unwrap();
    let profile = profile_dir.file_name().unwrap().to_str().unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = std::process::Command::new(cargo);
    cmd.args(["test", "--quiet", "-p", "stepwise-tests", "--manifest-path"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml"))
        .env("CARGO_TARGET_DIR", target_dir)
        .env(PORTABLE_ENV, "1");
    match profile {
        "debug" => {}
        "release" => {
            cmd.arg("--release");
        }
        other => {
            cmd.args(["--profile", other]);
        }
    }
    let mut names = Vec::new();
    for (test, tests) in PORTABLE_RUN {
        cmd.args(["--test", test]);
        names.extend(tests.iter().copied());
    }
    cmd.arg("--").arg("--exact").args(&names);
    let out = cmd.output().expect("cannot run cargo test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the portable run failed:\n{stdout}\n{stderr}");
    // Every named test ran (a renamed one would otherwise be filtered out silently).
    let passed: usize = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("test result: ok. "))
        .filter_map(|l| l.split(' ').next()?.parse::<usize>().ok())
        .sum();
    assert_eq!(passed, names.len(), "tests passed on the portable paths:\n{stdout}");
}
