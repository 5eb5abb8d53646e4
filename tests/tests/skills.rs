//! Skills (the Agent Skills format) through every way in: the real binary's `run`, `chat` and `doctor`,
//! the ACP agent and the sidecar, against the scripted model. Each test has a home and a config folder of
//! its own (`HOME`, `XDG_CONFIG_HOME`), so the machine's own skills play no part.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use common::{call, messages, results, system_text, texts};
use serde_json::{json, Value};
use stepwise_tests::acp_agent::ScriptedAgent;
use stepwise_tests::acp_client::{chunks, of_kind};
use stepwise_tests::lsp_client::{editor, folder_and_state, stepwise_binary, ClientPreset};
use stepwise_tests::mock::{MockModel, Step};
use stepwise_tests::TempDir;
use tokio::io::AsyncWriteExt;

/// A workspace with a home and a config folder of its own.
struct Setup {
    ws: TempDir,
    home: TempDir,
    config: TempDir,
}

impl Setup {
    fn new(tag: &str) -> Setup {
        Setup {
            ws: TempDir::new(tag),
            home: TempDir::new(&format!("{tag}-home")),
            config: TempDir::new(&format!("{tag}-config")),
        }
    }

    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("HOME", self.home.path().display().to_string()),
            ("XDG_CONFIG_HOME", self.config.path().display().to_string()),
        ]
    }

    /// `stepwise ARGS` with only PATH, the home and config folders, and the model (when given).
    fn stepwise(&self, mock: Option<&MockModel>) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(stepwise_binary(false));
        cmd.env_clear().env("PATH", std::env::var("PATH").unwrap_or_default()).envs(self.env());
        if let Some(mock) = mock {
            cmd.env("ANTHROPIC_BASE_URL", mock.url()).env("ANTHROPIC_API_KEY", "k").env("MODEL_ID", "m");
        }
        cmd.current_dir(self.ws.path()).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd.kill_on_drop(true);
        cmd
    }
}

/// Writes `<folder>/<name>/SKILL.md` with this frontmatter and body; the skill's folder.
fn skill(folder: &Path, name: &str, front: &str, body: &str) -> PathBuf {
    let dir = folder.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), format!("---\n{front}\n---\n{body}")).unwrap();
    dir
}

fn good(folder: &Path, name: &str, description: &str) -> PathBuf {
    skill(folder, name, &format!("name: {name}\ndescription: {description}"), &format!("How to {name}.\n"))
}

/// A workspace skill `release` with a bundled script that says where it ran and with what.
fn release(ws: &Path) -> PathBuf {
    let dir = skill(
        &ws.join(".agents/skills"),
        "release",
        "name: release\ndescription: >\n  How we release: tag,\n  then publish.\nmetadata:\n  owner: team",
        "# Release\n\nRun `scripts/tag.sh VERSION` from the workspace.\n",
    );
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::write(dir.join("scripts/tag.sh"), "echo \"tagged v$1 in $(pwd)\"\n").unwrap();
    dir
}

fn block(dir: &Path, name: &str, body: &str) -> String {
    format!("<skill name=\"{name}\" path=\"{}\">\n{body}\n</skill>", dir.display())
}

async fn output(cmd: &mut tokio::process::Command) -> Output {
    let child = cmd.spawn().unwrap();
    tokio::time::timeout(Duration::from_secs(30), child.wait_with_output()).await.expect("stepwise hung").unwrap()
}

fn show(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
}

fn user_texts(body: &Value, i: usize) -> Vec<String> {
    texts(&messages(body)[i])
}

#[tokio::test]
async fn doctor_lists_each_folders_skills_the_hidden_and_the_skipped() {
    let s = Setup::new("skills-doctor");
    let (ws, home, config) = (s.ws.path(), s.home.path(), s.config.path());
    let release = release(ws);
    let api = good(&ws.join(".claude/skills"), "api", "Our API conventions");
    let mine = good(&home.join(".agents/skills"), "mine", "My habits");
    let notes = skill(
        &config.join("stepwise/skills"),
        "notes",
        "name: notes\ndescription: Where notes go\ndisable-model-invocation: true",
        "",
    );
    let older = good(&home.join(".agents/skills"), "release", "An older release");
    skill(&ws.join(".agents/skills"), "broken", "name: Broken\ndescription: d", "");

    let out = output(s.stepwise(None).args(["doctor", "--json", "--workspace"]).arg(ws)).await;
    let r: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(&out)));
    assert_eq!(
        r["skills"],
        json!([
            {"name": "release", "description": "How we release: tag, then publish.", "path": release, "scope": "workspace", "userOnly": false},
            {"name": "api", "description": "Our API conventions", "path": api, "scope": "workspace", "userOnly": false},
            {"name": "mine", "description": "My habits", "path": mine, "scope": "user", "userOnly": false},
            {"name": "notes", "description": "Where notes go", "path": notes, "scope": "user", "userOnly": true},
        ])
    );
    assert_eq!(r["skillsHidden"], json!([{"name": "release", "path": older, "by": release}]));
    assert_eq!(
        r["skillProblems"],
        json!([{"path": ws.join(".agents/skills/broken/SKILL.md"),
                "problem": "`name` `Broken` may hold only lowercase letters, digits and hyphens"}])
    );
    // A bad skill is no reason a run could not start.
    assert_eq!(out.status.code(), Some(1), "no model here: {}", show(&out));
    assert!(!r["problems"].to_string().contains("Broken"), "{}", r["problems"]);

    let out = output(s.stepwise(None).args(["doctor", "--workspace"]).arg(ws)).await;
    let text = String::from_utf8_lossy(&out.stdout);
    for line in [
        format!("skills      release (workspace): {}", release.display()),
        format!("            notes (user, only the user calls it): {}", notes.display()),
        format!("skill hidden release in {}: the one in {} wins", older.display(), release.display()),
        format!(
            "skill problem {}: `name` `Broken` may hold only lowercase letters, digits and hyphens (skipped)",
            ws.join(".agents/skills/broken/SKILL.md").display()
        ),
    ] {
        assert!(text.contains(&line), "{line:?} in\n{text}");
    }

    // Without XDG_CONFIG_HOME, the config folder is ~/.config.
    let moved = good(&home.join(".config/stepwise/skills"), "moved", "Found under ~/.config");
    let out =
        output(s.stepwise(None).env_remove("XDG_CONFIG_HOME").args(["doctor", "--json", "--workspace"]).arg(ws)).await;
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let paths: Vec<&str> = r["skills"].as_array().unwrap().iter().map(|s| s["path"].as_str().unwrap()).collect();
    assert!(paths.contains(&moved.to_str().unwrap()) && !paths.contains(&notes.to_str().unwrap()), "{paths:?}");
}

#[tokio::test]
async fn run_slash_name_brings_the_skill_into_the_turn_the_model_reads() {
    let s = Setup::new("skills-run-slash");
    let dir = release(s.ws.path());
    let mock = MockModel::start(vec![Step::text("Released 1.2.")]).await;
    let o = output(s.stepwise(Some(&mock)).args(["run", "--yes", "/release 1.2"])).await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let sent = &mock.requests()[0].body;
    let body = "# Release\n\nRun `scripts/tag.sh VERSION` from the workspace.";
    assert_eq!(user_texts(sent, 0), ["/release 1.2".to_string(), block(&dir, "release", body)]);
    let system = system_text(sent);
    assert!(system.contains("\n- release: How we release: tag, then publish."), "{system}");
    assert!(tool_names(sent).contains(&"load_skill".to_string()));
}

#[tokio::test]
async fn the_model_loads_a_skill_then_runs_its_script_with_bash() {
    let s = Setup::new("skills-load");
    let dir = release(s.ws.path());
    let script = dir.join("scripts/tag.sh");
    let mock = MockModel::start(vec![
        call("load_skill", json!({"name": "release"})),
        call("bash", json!({"command": format!("sh {} 1.2", script.display())})),
        Step::text("Tagged."),
    ])
    .await;
    let o = output(s.stepwise(Some(&mock)).args(["run", "--yes", "tag the release"])).await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3);
    let body = "# Release\n\nRun `scripts/tag.sh VERSION` from the workspace.";
    assert_eq!(results(&reqs[1].body)[0].1, block(&dir, "release", body));
    let ran = &results(&reqs[2].body)[0];
    assert!(!ran.2 && ran.1.contains(&format!("tagged v1.2 in {}", s.ws.path().display())), "{ran:?}");
}

#[tokio::test]
async fn a_skill_only_the_user_calls_is_kept_from_the_model_and_called_by_the_user() {
    let s = Setup::new("skills-user-only");
    let agents = s.ws.join(".agents/skills");
    let deploy =
        skill(&agents, "deploy", "name: deploy\ndescription: Deploys\ndisable-model-invocation: true", "Deploy.");
    good(&agents, "api", "Our API conventions");
    let mock = MockModel::start(vec![call("load_skill", json!({"name": "deploy"})), Step::text("Done.")]).await;
    let o = output(s.stepwise(Some(&mock)).args(["run", "--yes", "/deploy staging"])).await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let reqs = mock.requests();
    let system = system_text(&reqs[0].body);
    assert!(system.contains("\n- api: Our API conventions") && !system.contains("deploy"), "{system}");
    assert_eq!(user_texts(&reqs[0].body, 0), ["/deploy staging".to_string(), block(&deploy, "deploy", "Deploy.")]);
    let (_, refused, is_error) = &results(&reqs[1].body)[0];
    assert!(*is_error && refused.contains("only the user calls"), "{refused}");

    // With only such skills, the model is not offered load_skill at all.
    std::fs::remove_dir_all(agents.join("api")).unwrap();
    let mock = MockModel::start(vec![Step::text("Hi.")]).await;
    let o = output(s.stepwise(Some(&mock)).args(["run", "--yes", "hello"])).await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let sent = &mock.requests()[0].body;
    assert!(!tool_names(sent).contains(&"load_skill".to_string()));
    assert!(!system_text(sent).contains("Skills:"));
}

#[tokio::test]
async fn chat_sees_a_skill_made_during_a_run_at_the_next_run_and_runs_slash_name() {
    let s = Setup::new("skills-chat");
    let made = s.ws.join(".agents/skills/notes");
    let write = format!(
        "mkdir -p {0} && printf -- '---\\nname: notes\\ndescription: Where notes go\\n---\\nNotes go in NOTES.md.\\n' > {0}/SKILL.md",
        made.display()
    );
    let mock =
        MockModel::start(vec![call("bash", json!({"command": write})), Step::text("Made."), Step::text("Noted.")])
            .await;
    let mut cmd = s.stepwise(Some(&mock));
    cmd.env("STEPWISE_SANDBOX", "off").args(["chat", "--yes"]).stdin(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"make a notes skill\n/notes the meeting\n").await.unwrap();
    drop(stdin);
    let o = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output()).await.unwrap().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3, "{}", show(&o));
    // Within the run that made it, the system prompt stays as it began (the provider caches it).
    assert_eq!(system_text(&reqs[0].body), system_text(&reqs[1].body));
    assert!(!system_text(&reqs[1].body).contains("notes"));
    // The next run finds it, and `/notes` calls it.
    assert!(system_text(&reqs[2].body).contains("\n- notes: Where notes go"));
    let last = messages(&reqs[2].body).last().unwrap();
    assert_eq!(texts(last), ["/notes the meeting".to_string(), block(&made, "notes", "Notes go in NOTES.md.")]);
}

#[tokio::test]
async fn acp_lists_skills_beside_its_commands_runs_slash_name_and_tells_of_new_skills() {
    let s = Setup::new("skills-acp");
    let dir = release(s.ws.path());
    // A skill named as one of the agent's own commands: the agent's wins.
    good(&s.ws.join(".agents/skills"), "compact", "Never listed");
    let mock = MockModel::start(vec![Step::text("Released."), Step::text("Hello."), Step::text("Summary.")]).await;
    let mut agent = ScriptedAgent::new("skills-acp-agent", mock);
    for (k, v) in s.env() {
        agent = agent.env(k, v);
    }
    let mut client = agent.initialized().await;
    let sid = client.new_session(s.ws.path()).await;
    let update = client.until(|m| m["params"]["update"]["sessionUpdate"] == "available_commands_update").await;
    let commands = &update["params"]["update"]["availableCommands"];
    let names: Vec<&str> = commands.as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["compact", "plan", "checkpoints", "rewind", "release"]);
    assert_eq!(
        commands[4],
        json!({"name": "release", "description": "How we release: tag, then publish.",
               "input": {"hint": "what the skill is for this time (optional)"}})
    );

    let (resp, updates) = client.prompt(&sid, "/release 1.2").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    let body = "# Release\n\nRun `scripts/tag.sh VERSION` from the workspace.";
    let sent = &agent.mock.requests()[0].body;
    assert_eq!(user_texts(sent, 0), ["/release 1.2".to_string(), block(&dir, "release", body)]);
    assert!(of_kind(&updates, "available_commands_update").is_empty(), "nothing changed: {updates:?}");

    // A skill added while the session is open: the next prompt's run finds it, and the client is told.
    good(&s.ws.join(".agents/skills"), "notes", "Where notes go");
    let (_, updates) = client.prompt(&sid, "hello").await;
    let told = of_kind(&updates, "available_commands_update");
    assert_eq!(told.len(), 1, "{updates:?}");
    let names: Vec<&str> =
        told[0]["availableCommands"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["compact", "plan", "checkpoints", "rewind", "notes", "release"]);
    assert!(system_text(&agent.mock.requests()[1].body).contains("\n- notes: Where notes go"));

    // The session loaded again: the prompt is shown as typed, the skill it called is not the user's words.
    let mut second = agent.initialized().await;
    let from = second.received.len();
    second.call("session/load", json!({"sessionId": sid, "cwd": s.ws.path(), "mcpServers": []})).await;
    let said = chunks(&second.updates_since(from), "user_message_chunk");
    assert_eq!(said, "/release 1.2hello", "{said}");

    // `/compact` is the agent's: a summary request, never the skill of that name.
    let (resp, _) = client.prompt(&sid, "/compact").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    let asked = &agent.mock.requests()[2].body;
    let said: Vec<String> = messages(asked).iter().flat_map(texts).collect();
    assert!(said.last().unwrap().starts_with("Summarise the conversation"), "{said:?}");
    assert!(!said.iter().any(|t| t.contains("<skill name=\"compact\"")), "{said:?}");
}

#[tokio::test]
async fn the_sidecar_answers_the_folders_skills_for_completion() {
    let (dir, state) = folder_and_state("skills-lsp");
    let home = TempDir::new("skills-lsp-home");
    release(dir.path());
    skill(
        &dir.join(".claude/skills"),
        "deploy",
        "name: deploy\ndescription: Deploys\ndisable-model-invocation: true",
        "",
    );
    good(&home.join(".agents/skills"), "mine", "My habits");
    let mock = MockModel::start(vec![]).await;
    let home_path = home.path().display().to_string();
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock)
        .binary()
        .env("HOME", &home_path)
        .env("XDG_CONFIG_HOME", &home_path)
        .start()
        .await;
    let answer = ed.execute("stepwise.skills", json!({})).await.unwrap();
    assert_eq!(
        answer,
        json!({"skills": [
            {"name": "release", "description": "How we release: tag, then publish."},
            {"name": "deploy", "description": "Deploys"},
            {"name": "mine", "description": "My habits"},
        ]})
    );
    ed.finish().await;
}
