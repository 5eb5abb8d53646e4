//! Shared helpers of the end-to-end tests: a temp workspace, a collecting event sink, the real engine
//! wired to the scripted mock model, and checks on what the model was sent.
#![allow(dead_code)]

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use stepwise::agent::{AgentConfig, RunOutcome, Session};
use stepwise::events::{Event, EventSink};
use stepwise::host::DiskHost;
use stepwise::llm::{Llm, Message, ProviderConfig, ProviderKind, Usage};
use stepwise::workspace::Workspace;
use stepwise_tests::mock::{MockModel, Step, Turn};
use tokio_util::sync::CancellationToken;

#[allow(unused_imports)]
pub use stepwise::agent::FinishReason;

pub const REMINDER: &str = "<reminder>Update your todos.</reminder>";
pub const WAIT: Duration = Duration::from_secs(5);

// ------------------------------------------------------------------------------------------------
// Temp directories
// ------------------------------------------------------------------------------------------------

pub use stepwise_tests::TempDir;

// ------------------------------------------------------------------------------------------------
// Events
// ------------------------------------------------------------------------------------------------

/// An owned copy of an engine event.
#[derive(Debug, Clone, PartialEq)]
pub enum Ev {
    Thinking(u32),
    Text(String),
    ToolStarted {
        id: String,
        name: String,
        input: Value,
    },
    ToolFinished {
        id: String,
        name: String,
        output: String,
        is_error: bool,
    },
    Plan(String),
    Reminder(String),
    Diagnostics(String),
    Usage {
        round: Usage,
        run: Usage,
    },
    Compacted {
        before: u64,
        after: u64,
        error: Option<String>,
    },
    Finished(RunOutcome),
    /// A child agent's state (`task`): its id, the call that made it, its state, rounds and tokens.
    Subagent {
        id: String,
        call: String,
        state: String,
        rounds: u32,
        tokens: u64,
    },
    /// A child's own event.
    Child {
        id: String,
        ev: Box<Ev>,
    },
}

#[derive(Default)]
pub struct Collect {
    events: Mutex<Vec<Ev>>,
    checkpoints: AtomicU64,
}

impl Collect {
    pub fn events(&self) -> Vec<Ev> {
        self.events.lock().unwrap().clone()
    }

    /// Events so far, clearing the list.
    pub fn take(&self) -> Vec<Ev> {
        std::mem::take(&mut *self.events.lock().unwrap())
    }

    pub fn checkpoints(&self) -> u64 {
        self.checkpoints.load(Ordering::Relaxed)
    }

    pub fn reminders(&self) -> usize {
        self.events().iter().filter(|e| matches!(e, Ev::Reminder(_))).count()
    }

    pub fn usages(&self) -> Vec<(Usage, Usage)> {
        self.events()
            .iter()
            .filter_map(|e| match e {
                Ev::Usage { round, run } => Some((*round, *run)),
                _ => None,
            })
            .collect()
    }
}

impl EventSink for Collect {
    fn emit(&self, event: Event<'_>) {
        if let Some(ev) = owned(&event) {
            self.events.lock().unwrap().push(ev);
        }
    }

    fn checkpoint(&self, _messages: &[Message]) {
        self.checkpoints.fetch_add(1, Ordering::Relaxed);
    }
}

/// An engine event as an owned `Ev` (`None`: not collected).
pub fn owned(event: &Event<'_>) -> Option<Ev> {
    Some(match *event {
        Event::Thinking { round } => Ev::Thinking(round),
        Event::AssistantText { text } => Ev::Text(text.to_string()),
        Event::ToolStarted { id, name, input, .. } => {
            Ev::ToolStarted { id: id.into(), name: name.into(), input: input.clone() }
        }
        Event::ToolFinished { id, name, output, is_error, .. } => {
            Ev::ToolFinished { id: id.into(), name: name.into(), output: output.into(), is_error }
        }
        Event::PlanChanged { state } => Ev::Plan(state.plan.render()),
        Event::Reminder { text } => Ev::Reminder(text.into()),
        Event::Diagnostics { text, .. } => Ev::Diagnostics(text.into()),
        Event::Usage { round, run, .. } => Ev::Usage { round, run },
        Event::Compacted { tokens_before, tokens_after, error } => {
            Ev::Compacted { before: tokens_before, after: tokens_after, error: error.map(str::to_string) }
        }
        Event::RunFinished { outcome } => Ev::Finished(outcome.clone()),
        Event::Checkpoint { .. } => return None,
        Event::Subagent { id, tool_call_id, state, rounds, tokens, .. } => {
            Ev::Subagent { id: id.into(), call: tool_call_id.into(), state: state.as_str().into(), rounds, tokens }
        }
        Event::Child { id, inner } => Ev::Child { id: id.into(), ev: Box::new(owned(inner)?) },
    })
}

// ------------------------------------------------------------------------------------------------
// The engine against the mock
// ------------------------------------------------------------------------------------------------

fn host_root(host: &DiskHost) -> std::path::PathBuf {
    use stepwise::host::Host;
    host.root().to_path_buf()
}

/// Provider settings for tests: fast retries (10 ms backoff), short timeouts.
pub fn provider(kind: ProviderKind, base_url: String) -> ProviderConfig {
    ProviderConfig {
        kind,
        model: "mock-model-1".into(),
        base_url,
        api_key: "test-key".into(),
        max_tokens: 1024,
        timeout: Duration::from_secs(10),
        max_retries: 3,
        backoff: Duration::from_millis(10),
        context_window: 200_000,
        // Tests compare conversations exactly; core_cache.rs tests the breakpoints.
        prompt_cache: false,
    }
}

pub struct Harness {
    pub mock: Arc<MockModel>,
    pub ws: TempDir,
    pub llm: Llm,
    pub host: DiskHost,
    pub cfg: AgentConfig,
    /// The engine's workspace on `ws`: the conversation and plan the runs continue.
    pub work: Arc<Workspace>,
    pub events: Collect,
}

impl Harness {
    /// Anthropic format, default agent settings.
    pub async fn new(script: Vec<Step>) -> Harness {
        Harness::with(ProviderKind::Anthropic, script, AgentConfig::default(), |p| p).await
    }

    pub async fn with_cfg(script: Vec<Step>, cfg: AgentConfig) -> Harness {
        Harness::with(ProviderKind::Anthropic, script, cfg, |p| p).await
    }

    pub async fn with(
        kind: ProviderKind,
        script: Vec<Step>,
        cfg: AgentConfig,
        tweak: impl FnOnce(ProviderConfig) -> ProviderConfig,
    ) -> Harness {
        Harness::on(kind, MockModel::start(script).await, cfg, tweak)
    }

    /// The engine against a mock started by the caller (e.g. with `MockOptions`).
    pub fn on(
        kind: ProviderKind,
        mock: MockModel,
        cfg: AgentConfig,
        tweak: impl FnOnce(ProviderConfig) -> ProviderConfig,
    ) -> Harness {
        let base = match kind {
            ProviderKind::Anthropic => mock.url(),
            ProviderKind::Openai => mock.openai_base(),
        };
        let p = tweak(provider(kind, base));
        let llm = Llm::new(p.clone()).unwrap();
        let ws = TempDir::new("ws");
        let host = DiskHost::new(ws.path(), None).unwrap();
        let work = Workspace::new(host_root(&host), Session::default(), None);
        Harness { mock: Arc::new(mock), ws, llm, host, cfg, work, events: Collect::default() }
    }

    pub async fn run(&mut self, prompt: &str) -> RunOutcome {
        let token = CancellationToken::new();
        self.run_with(prompt, &token).await
    }

    pub async fn run_with(&mut self, prompt: &str, token: &CancellationToken) -> RunOutcome {
        let ticket = self.work.begin().expect("no run in progress");
        // The caller's token cancels the run.
        let (theirs, ours) = (token.clone(), ticket.cancel.clone());
        let link = tokio::spawn(async move {
            theirs.cancelled().await;
            ours.cancel();
        });
        let run = self.work.prompt(&ticket, prompt, &self.llm, &self.host, &self.events, &self.cfg);
        // A generous bound so a hung engine fails the test instead of stalling the suite.
        let outcome = tokio::time::timeout(Duration::from_secs(30), run).await.expect("the run did not finish in 30 s");
        link.abort();
        outcome
    }

    /// The conversation and plan as they are now.
    pub async fn session(&self) -> Session {
        let state = self.work.plan();
        Session {
            messages: self.work.messages().await,
            plan: state.plan,
            revision: state.revision,
            ..Default::default()
        }
    }

    /// The JSON bodies of every request the model received so far.
    pub fn bodies(&self) -> Vec<Value> {
        self.mock.requests().into_iter().map(|r| r.body).collect()
    }

    pub fn body(&self, i: usize) -> Value {
        let b = self.bodies();
        assert!(i < b.len(), "request #{i} was never sent; {} requests", b.len());
        b[i].clone()
    }
}

// ------------------------------------------------------------------------------------------------
// Scripts
// ------------------------------------------------------------------------------------------------

/// One model turn calling these tools in order (no text).
pub fn calls(list: &[(&str, Value)]) -> Step {
    let mut t = Turn::default();
    for (name, input) in list {
        t = t.with_tool(*name, input.clone());
    }
    t.into()
}

pub fn call(name: &str, input: Value) -> Step {
    calls(&[(name, input)])
}

// ------------------------------------------------------------------------------------------------
// What the model was sent (Anthropic format)
// ------------------------------------------------------------------------------------------------

pub fn messages(body: &Value) -> &Vec<Value> {
    body["messages"].as_array().unwrap_or_else(|| panic!("request has no messages: {body}"))
}

pub fn last_message(body: &Value) -> &Value {
    messages(body).last().expect("no messages")
}

/// The tool results of the last (user) message: (tool_use_id, content, is_error).
pub fn results(body: &Value) -> Vec<(String, String, bool)> {
    let m = last_message(body);
    assert_eq!(m["role"], "user", "last message is not a user turn: {m}");
    tool_results(m)
}

pub fn tool_results(m: &Value) -> Vec<(String, String, bool)> {
    m["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            let is_error = match b.get("is_error") {
                None => false,
                Some(Value::Bool(v)) => *v,
                Some(other) => panic!("is_error is not a bool: {other}"),
            };
            // A string, or blocks (a result with images): their text.
            let content = match &b["content"] {
                Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n"),
                other => other.as_str().unwrap().to_string(),
            };
            (b["tool_use_id"].as_str().unwrap().to_string(), content, is_error)
        })
        .collect()
}

/// The texts of the tool results of the last message, in order.
pub fn result_texts(body: &Value) -> Vec<String> {
    results(body).into_iter().map(|(_, c, _)| c).collect()
}

/// The system prompt of an Anthropic request: a string, or text blocks (with cache breakpoints).
pub fn system_text(body: &Value) -> String {
    match &body["system"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect(),
        other => panic!("no system prompt: {other}"),
    }
}

/// The text blocks of a message.
pub fn texts(m: &Value) -> Vec<String> {
    m["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "text")
        .map(|b| b["text"].as_str().unwrap().to_string())
        .collect()
}

pub fn tool_uses(m: &Value) -> Vec<(String, String, Value)> {
    m["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| (b["id"].as_str().unwrap().to_string(), b["name"].as_str().unwrap().to_string(), b["input"].clone()))
        .collect()
}

/// Whether this request carries the reminder anywhere.
pub fn has_reminder(body: &Value) -> bool {
    messages(body).iter().any(|m| texts(m).iter().any(|t| t == REMINDER))
}

/// Whether the last message carries the reminder (as its last block).
pub fn last_has_reminder(body: &Value) -> bool {
    let blocks = last_message(body)["content"].as_array().unwrap();
    blocks.iter().any(|b| b["type"] == "text" && b["text"] == REMINDER)
}

/// An Anthropic conversation the API would accept: starts with the user, roles alternate, no empty
/// message, every tool_use answered by exactly one tool_result in the next message (results first),
/// and no tool_result without its tool_use.
pub fn assert_valid_conversation(body: &Value) {
    let msgs = messages(body);
    assert!(!msgs.is_empty());
    assert_eq!(msgs[0]["role"], "user", "conversation must start with the user: {body}");
    for (i, m) in msgs.iter().enumerate() {
        let want = if i % 2 == 0 { "user" } else { "assistant" };
        assert_eq!(m["role"], want, "message {i} has the wrong role: {}", serde_json::to_string_pretty(msgs).unwrap());
        let blocks = m["content"].as_array().unwrap();
        assert!(!blocks.is_empty(), "message {i} is empty");
        if want == "user" {
            let uses = if i > 0 { tool_uses(&msgs[i - 1]) } else { vec![] };
            let res = tool_results(m);
            let use_ids: Vec<&str> = uses.iter().map(|u| u.0.as_str()).collect();
            let res_ids: Vec<&str> = res.iter().map(|r| r.0.as_str()).collect();
            assert_eq!(res_ids, use_ids, "message {i}: tool results do not answer the previous tool uses one to one");
            // Results come before any text of the turn.
            let first_text = blocks.iter().position(|b| b["type"] == "text").unwrap_or(blocks.len());
            let last_result = blocks.iter().rposition(|b| b["type"] == "tool_result");
            if let Some(r) = last_result {
                assert!(r < first_text, "message {i}: a text block precedes a tool_result");
            }
        } else {
            assert!(tool_results(m).is_empty(), "assistant message {i} carries tool results");
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Processes
// ------------------------------------------------------------------------------------------------

/// True while `pid` is a running (not zombie) process.
pub fn process_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            // "pid (comm) S ...": the state follows the last ')'.
            let state = stat.rsplit(')').next().unwrap_or("").trim_start().chars().next().unwrap_or('?');
            !matches!(state, 'Z' | 'X' | 'x')
        }
    }
}

/// Waits up to 3 s for `pid` to be gone.
pub fn wait_gone(pid: i32) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(3) {
        if !process_alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    !process_alive(pid)
}

/// Reads a PID a shell command wrote to a file, waiting a little for it to appear.
pub fn read_pid(path: &Path) -> i32 {
    let start = Instant::now();
    loop {
        if let Ok(s) = std::fs::read_to_string(path) {
            if let Ok(p) = s.trim().parse() {
                return p;
            }
        }
        assert!(start.elapsed() < Duration::from_secs(3), "no pid in {}", path.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}
