//! `stepwise doctor`: the configuration as stepwise reads it, for people and for editors (`--json`).

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::{MockModel, Step};
use stepwise_tests::temp::TempDir;

/// `stepwise doctor ARGS` from `cwd` with only `vars` (and PATH/HOME) in the environment.
fn doctor(cwd: &Path, vars: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = Command::new(stepwise_binary(false));
    cmd.env_clear().current_dir(cwd).stdin(Stdio::null());
    for keep in ["PATH", "HOME"] {
        if let Ok(v) = std::env::var(keep) {
            cmd.env(keep, v);
        }
    }
    cmd.envs(vars.iter().copied()).arg("doctor").args(args);
    cmd.output().unwrap()
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

fn all_text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn doctor_reports_each_value_and_the_file_it_came_from_never_the_key() {
    let ws = TempDir::new("doctor-ws");
    let cwd = TempDir::new("doctor-cwd");
    let state = TempDir::new("doctor-state");
    ws.write(".env", "MODEL_ID=model-from-ws\nANTHROPIC_API_KEY=sk-ws-secret-123\n");
    // The current directory's .env fills in what the workspace's lacks; the workspace's wins.
    cwd.write(
        ".env",
        "MODEL_ID=model-from-cwd\nANTHROPIC_BASE_URL=http://127.0.0.1:9/\nANTHROPIC_API_KEY=sk-cwd-secret\n",
    );
    let vars = [("STEPWISE_PROVIDER", "anthropic"), ("STEPWISE_STATE_DIR", state.path().to_str().unwrap())];
    let ws_arg = ws.path().to_str().unwrap();
    let out = doctor(cwd.path(), &vars, &["--workspace", ws_arg, "--json"]);
    assert!(!all_text(&out).contains("secret"), "the key is never shown: {}", all_text(&out));
    let r = json_of(&out);
    let ws_env = ws.join(".env");
    let cwd_env = cwd.join(".env");
    assert_eq!(r["workspace"], json!(ws.path()));
    assert_eq!(r["envFiles"], json!([ws_env, cwd_env]));
    assert_eq!(r["provider"], json!({"value": "anthropic", "variable": "STEPWISE_PROVIDER", "source": "environment"}));
    assert_eq!(r["model"], json!({"value": "model-from-ws", "variable": "MODEL_ID", "source": "file", "file": ws_env}));
    assert_eq!(
        r["baseUrl"],
        json!({"value": "http://127.0.0.1:9/", "variable": "ANTHROPIC_BASE_URL", "source": "file", "file": cwd_env})
    );
    // The key and the URL come from different files: a run would refuse this endpoint until approved.
    assert_eq!(r["apiKey"], json!({"variable": "ANTHROPIC_API_KEY", "set": true, "source": "file", "file": ws_env}));
    assert_eq!(r["missing"], json!([]));
    let problems = r["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].as_str().unwrap().contains("ANTHROPIC_BASE_URL in"), "{problems:?}");
    assert_eq!((r["ok"].clone(), out.status.code()), (json!(false), Some(1)));
    assert_eq!(r["stateDir"], json!(state.path()));
    assert_eq!(r["version"], env!("CARGO_PKG_VERSION"));

    // Without the foreign URL: ready, exit 0; the text report names each file.
    std::fs::remove_file(cwd.join(".env")).unwrap();
    let out = doctor(cwd.path(), &vars, &["--workspace", ws_arg]);
    assert_eq!(out.status.code(), Some(0), "{}", all_text(&out));
    let text = all_text(&out);
    assert!(!text.contains("secret"), "{text}");
    for needle in [
        format!("model       model-from-ws ({})", ws_env.display()),
        format!("API key     ANTHROPIC_API_KEY is set ({})", ws_env.display()),
        "provider    anthropic (environment)".to_string(),
        "base URL    https://api.anthropic.com (default)".to_string(),
        format!("state dir   {}", state.path().display()),
        "ready: a run can reach the model".to_string(),
    ] {
        assert!(text.contains(&needle), "{needle:?} missing in:\n{text}");
    }
}

#[test]
fn doctor_names_what_is_missing_and_honours_editor_settings() {
    let ws = TempDir::new("doctor-empty");
    let state = TempDir::new("doctor-empty-state");
    let vars = [("STEPWISE_STATE_DIR", state.path().to_str().unwrap())];
    let out = doctor(ws.path(), &vars, &["--json"]);
    assert_eq!(out.status.code(), Some(1));
    let r = json_of(&out);
    assert_eq!(r["missing"], json!(["model", "apiKey"]));
    assert_eq!(
        r["problems"],
        json!([
            "no model configured: set MODEL_ID (in the environment or a .env file)",
            "no API key: set ANTHROPIC_API_KEY (in the environment or a .env file)"
        ])
    );
    assert_eq!(r["model"], json!({"value": null, "variable": "MODEL_ID", "source": "unset"}));
    assert_eq!(r["apiKey"]["set"], false);
    assert_eq!(r["envFiles"], json!([]));
    let text = all_text(&doctor(ws.path(), &vars, &[]));
    assert!(text.contains("model       missing: set MODEL_ID"), "{text}");
    assert!(text.contains("problems:\n  - no model configured"), "{text}");

    // The settings an editor sends (initializationOptions) count, as they do in the sidecar: a local
    // OpenAI-compatible server needs no key.
    let settings = r#"{"provider":"openai","model":"qwen","baseUrl":"http://127.0.0.1:11434/v1","serverPath":"x"}"#;
    let out = doctor(ws.path(), &vars, &["--json", "--settings", settings]);
    let r = json_of(&out);
    assert_eq!(out.status.code(), Some(0), "{r}");
    assert_eq!(r["model"], json!({"value": "qwen", "variable": "MODEL_ID", "source": "settings"}));
    assert_eq!(r["provider"]["source"], "settings");
    assert_eq!(r["apiKey"], json!({"variable": "OPENAI_API_KEY", "set": false, "source": "unset"}));
    // A key from the environment is reported as such; a bad number is a problem.
    let out = doctor(
        ws.path(),
        &[("ANTHROPIC_API_KEY", "sk-env"), ("MODEL_ID", "m"), ("STEPWISE_MAX_ROUNDS", "many")],
        &["--json"],
    );
    let r = json_of(&out);
    assert_eq!(r["apiKey"], json!({"variable": "ANTHROPIC_API_KEY", "set": true, "source": "environment"}));
    assert_eq!(r["problems"], json!(["STEPWISE_MAX_ROUNDS must be a whole number, got 'many'"]));
    assert!(!all_text(&out).contains("sk-env"));

    // Bad usage: exit 2; --help: the usage, exit 0.
    assert_eq!(doctor(ws.path(), &vars, &["--bogus"]).status.code(), Some(2));
    assert_eq!(doctor(ws.path(), &vars, &["--settings", "{"]).status.code(), Some(2));
    let help = doctor(ws.path(), &vars, &["--help"]);
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("Usage: stepwise doctor"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_finds_the_session_the_sidecar_saved() {
    let (dir, state) = folder_and_state("doctor-session");
    let vars = [("STEPWISE_STATE_DIR", state.path().to_str().unwrap())];
    let ws_arg = dir.path().to_str().unwrap();
    assert_eq!(json_of(&doctor(dir.path(), &vars, &["--json", "--workspace", ws_arg]))["session"], Value::Null);
    let mock = MockModel::start(vec![
        Step::tool("todo", json!({"items": [{"id": "1", "text": "Look", "status": "completed"}]})),
        Step::text("Done."),
    ])
    .await;
    let ed = editor(ClientPreset::Neovim, &dir, &state, &mock).start().await;
    assert_eq!(ed.run("look").await.reason(), "end_turn");
    ed.finish().await;
    let r = json_of(&doctor(dir.path(), &vars, &["--json", "--workspace", ws_arg]));
    let session = r["session"].as_str().unwrap_or_else(|| panic!("no session reported: {r}"));
    assert!(Path::new(session).starts_with(state.path()), "{session}");
    assert!(std::fs::read_to_string(session).unwrap().contains("\"Look\""));
}

#[test]
fn doctor_says_whether_the_sandbox_can_start_and_how_it_is_set() {
    let ws = TempDir::new("doctor-sandbox");
    let out = doctor(ws.path(), &[], &["--json"]);
    let r = json_of(&out);
    let by = r["sandbox"]["by"].as_str().unwrap_or_else(|| panic!("no sandbox on this machine: {}", r["sandbox"]));
    assert!(by.starts_with("Landlock ABI "), "{by}");
    let fence = r["sandbox"]["networkFence"].as_str().unwrap_or_default().to_string();
    assert_eq!(
        r["sandbox"],
        json!({"mode": "workspace-write", "network": "off", "available": true, "by": by, "networkFence": fence}),
        "the default"
    );
    // As root (CI) or with user namespaces: a private namespace; else Landlock's rules, and why.
    match stepwise::sandbox::netns_availability() {
        Ok(how) => assert!(fence.starts_with("a private network namespace") && fence.contains(how), "{fence}"),
        Err(why) => assert!(fence.starts_with("Landlock's TCP rules") && fence.contains(&why), "{fence}"),
    }
    let text = all_text(&doctor(ws.path(), &[], &[]));
    assert!(text.contains(&format!("sandbox     workspace-write ({by}, network off)")), "{text}");
    assert!(text.contains(&format!("network     {fence}")), "{text}");
    let r = json_of(&doctor(ws.path(), &[("STEPWISE_SANDBOX_NO_NETNS", "1")], &["--json"]));
    assert!(r["sandbox"]["networkFence"].as_str().unwrap().starts_with("Landlock's TCP rules"), "{}", r["sandbox"]);
    let r = json_of(&doctor(ws.path(), &[("STEPWISE_SANDBOX_WRITABLE", "/opt/cache:/var/x")], &["--json"]));
    assert_eq!(r["sandbox"]["writable"], json!(["/opt/cache", "/var/x"]));

    // The editor's settings and the variables, each reported as set; an invalid one by name.
    let settings = r#"{"sandbox":"read-only","sandboxNetwork":"on"}"#;
    let r = json_of(&doctor(ws.path(), &[], &["--json", "--settings", settings]));
    assert_eq!((r["sandbox"]["mode"].as_str(), r["sandbox"]["network"].as_str()), (Some("read-only"), Some("on")));
    let r = json_of(&doctor(ws.path(), &[("STEPWISE_SANDBOX", "off")], &["--json"]));
    assert_eq!(r["sandbox"], json!({"mode": "off", "network": "off"}));
    let r = json_of(&doctor(ws.path(), &[("STEPWISE_SANDBOX", "strict")], &["--json"]));
    let problems = r["problems"].to_string();
    assert!(
        problems.contains("STEPWISE_SANDBOX must be 'workspace-write', 'read-only' or 'off', got 'strict'"),
        "{problems}"
    );

    // Where it cannot start: said, with why, and that commands ask instead.
    let vars = [(stepwise::sandbox::UNAVAILABLE_ENV, "1")];
    let r = json_of(&doctor(ws.path(), &vars, &["--json"]));
    assert_eq!(r["sandbox"]["available"], false);
    assert!(r["sandbox"]["reason"].as_str().unwrap().contains("pretending"), "{}", r["sandbox"]);
    let text = all_text(&doctor(ws.path(), &vars, &[]));
    assert!(text.contains("sandbox     unavailable: ") && text.contains("shell commands ask for approval"), "{text}");
}

#[test]
fn doctor_lists_the_language_servers_it_would_start_and_where_each_comes_from() {
    let ws = TempDir::new("doctor-ls-ws");
    let bin = TempDir::new("doctor-ls-bin");
    let config = TempDir::new("doctor-ls-config");
    // A well-known server found on PATH, and the user's own server for another language.
    bin.write("gopls", "#!/bin/sh\nexit 0\n");
    std::fs::set_permissions(bin.join("gopls"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    config.write(
        "stepwise/language-servers.json",
        r#"{"servers": {"zls": {"command": ["zls"], "extensions": ["zig"]}}}"#,
    );
    let path = bin.path().to_str().unwrap().to_string();
    let vars = [("PATH", path.as_str()), ("XDG_CONFIG_HOME", config.path().to_str().unwrap())];
    let out = doctor(ws.path(), &vars, &["--json"]);
    let r = json_of(&out);
    let servers = r["languageServers"].as_array().unwrap_or_else(|| panic!("no languageServers: {r}"));
    let gopls = servers.iter().find(|s| s["name"] == "gopls").unwrap_or_else(|| panic!("gopls not listed: {r}"));
    assert_eq!(gopls["extensions"], json!(["go"]));
    assert!(gopls["from"].as_str().unwrap().contains(&bin.join("gopls").display().to_string()), "{gopls}");
    let zls = servers.iter().find(|s| s["name"] == "zls").unwrap_or_else(|| panic!("zls not listed: {r}"));
    assert_eq!(zls["command"], json!(["zls"]));
    assert!(zls["from"].as_str().unwrap().contains("language-servers.json"), "{zls}");
    assert!(!servers.iter().any(|s| s["name"] == "pylsp"), "pylsp is not on this PATH: {r}");
    let text = all_text(&doctor(ws.path(), &vars, &[]));
    assert!(text.contains("language servers") && text.contains("gopls (.go)"), "{text}");
    // Nothing found: said, not silent.
    let empty = TempDir::new("doctor-ls-empty");
    let none = [("PATH", empty.path().to_str().unwrap()), ("XDG_CONFIG_HOME", empty.path().to_str().unwrap())];
    let text = all_text(&doctor(ws.path(), &none, &[]));
    assert!(text.contains("language servers") && text.contains("none found"), "{text}");
}
