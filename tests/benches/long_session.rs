//! Long-session benchmark: `cargo bench -p stepwise-tests --bench long_session`.
//!
//! A 200-round session whose every tool call prints 20,000 characters, against the mock with its simulated
//! usage and prompt cache (tokens = characters / 4; Anthropic's cache per `cache_control` breakpoint), with a
//! 200,000-token window. Run twice, with prompt caching on and off. Reports the tokens sent, the
//! billed-equivalent input (uncached input + 0.1 × cache reads + 1.25 × cache writes), the peak prompt and
//! how often the conversation was compacted. Goals: the prompt never above the window; with caching, the
//! billed-equivalent input at most 20% of the uncached total.

use std::sync::Mutex;

use serde_json::json;
use stepwise::agent::{AgentConfig, FinishReason, Session};
use stepwise::events::{Event, EventSink};
use stepwise::host::DiskHost;
use stepwise::llm::{Llm, ProviderConfig, ProviderKind, Usage};
use stepwise::workspace::Workspace;
use stepwise_tests::mock::{MockModel, MockOptions, Step};
use stepwise_tests::TempDir;

const ROUNDS: usize = 200;
const WINDOW: u64 = 200_000;

#[derive(Default)]
struct Tally {
    rounds: Mutex<Vec<Usage>>,
    compactions: Mutex<u32>,
}

impl EventSink for Tally {
    fn emit(&self, event: Event<'_>) {
        match event {
            Event::Usage { round, .. } => self.rounds.lock().unwrap().push(round),
            Event::Compacted { .. } => *self.compactions.lock().unwrap() += 1,
            _ => {}
        }
    }
}

struct Report {
    sent: u64,
    billed: f64,
    peak: u64,
    compactions: u32,
}

async fn session(cache: bool) -> Report {
    let mut steps: Vec<Step> = (0..ROUNDS)
        .map(|i| Step::tool("bash", json!({"command": format!("head -c 20000 /dev/zero | tr '\\0' a; echo {i}")})))
        .collect();
    steps.push(Step::text("done"));
    let mock = MockModel::start_with(steps, MockOptions { simulate_usage: true, ..Default::default() }).await.unwrap();
    let cfg = ProviderConfig {
        kind: ProviderKind::Anthropic,
        model: "bench".into(),
        base_url: mock.url(),
        api_key: "k".into(),
        max_tokens: 1024,
        timeout: std::time::Duration::from_secs(30),
        max_retries: 0,
        backoff: std::time::Duration::from_millis(10),
        context_window: WINDOW,
        prompt_cache: cache,
    };
    let llm = Llm::new(cfg).unwrap();
    let ws = TempDir::new("bench-long");
    let host = DiskHost::new(ws.path(), None).unwrap();
    let tally = Tally::default();
    let agent_cfg = AgentConfig { max_rounds: ROUNDS as u32 + 10, reminder_rounds: 1000, ..AgentConfig::default() };
    let work = Workspace::new(std::fs::canonicalize(ws.path()).unwrap(), Session::default(), None);
    let out = work.run_prompt("Print a lot, many times", &llm, &host, &tally, &agent_cfg).await.unwrap();
    assert_eq!(out.reason, FinishReason::EndTurn, "{:?}", out.error);
    let rounds = tally.rounds.lock().unwrap();
    let sent: u64 = rounds.iter().map(|u| u.input_tokens).sum();
    let billed: f64 = rounds
        .iter()
        .map(|u| {
            let uncached = u.input_tokens - u.cache_read_tokens - u.cache_write_tokens;
            uncached as f64 + 0.1 * u.cache_read_tokens as f64 + 1.25 * u.cache_write_tokens as f64
        })
        .sum();
    let peak = rounds.iter().map(|u| u.input_tokens).max().unwrap_or(0);
    let compactions = *tally.compactions.lock().unwrap();
    Report { sent, billed, peak, compactions }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let off = session(false).await;
        let on = session(true).await;
        println!("long session: {ROUNDS} rounds × 20,000-character tool outputs, window {WINDOW} tokens");
        println!("| caching | input tokens sent | billed-equivalent input | peak prompt | compactions |");
        println!("|---|---|---|---|---|");
        for (name, r) in [("off", &off), ("on", &on)] {
            println!("| {name} | {} | {:.0} | {} | {} |", r.sent, r.billed, r.peak, r.compactions);
        }
        println!(
            "billed-equivalent with caching: {:.1}% of the uncached total (goal ≤ 20%); peak prompt {} of {WINDOW} (goal: never above)",
            100.0 * on.billed / off.billed,
            on.peak.max(off.peak)
        );
    });
}
