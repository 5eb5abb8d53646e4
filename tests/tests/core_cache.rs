//! Anthropic prompt caching: breakpoints on the stable prefix and the newest messages, a prefix that
//! stays byte-stable between rounds, and the switch that turns it off.

mod common;

use common::*;
use serde_json::{json, Value};
use stepwise::agent::AgentConfig;
use stepwise::llm::{ProviderConfig, ProviderKind, Usage};
use stepwise_tests::mock::{MockModel, MockOptions, Step};

fn script() -> Vec<Step> {
    vec![
        call("bash", json!({"command": "echo one"})),
        call("read_file", json!({"path": "missing.txt"})),
        Step::text("done"),
    ]
}

fn breakpoints(v: &Value) -> usize {
    match v {
        Value::Object(m) => usize::from(m.contains_key("cache_control")) + m.values().map(breakpoints).sum::<usize>(),
        Value::Array(a) => a.iter().map(breakpoints).sum(),
        _ => 0,
    }
}

fn marked(block: &Value) -> bool {
    block["cache_control"] == json!({"type": "ephemeral"})
}

fn last_block(m: &Value) -> &Value {
    m["content"].as_array().and_then(|c| c.last()).expect("a message with content")
}

fn without_cache_control(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| *k != "cache_control")
                .map(|(k, v)| (k.clone(), without_cache_control(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_cache_control).collect()),
        other => other.clone(),
    }
}

#[tokio::test]
async fn anthropic_marks_tools_system_and_the_newest_messages() {
    let mut h = Harness::with(ProviderKind::Anthropic, script(), AgentConfig::default(), |p| ProviderConfig {
        prompt_cache: true,
        ..p
    })
    .await;
    h.run("look around").await;
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 3);
    for (i, b) in bodies.iter().enumerate() {
        assert!(breakpoints(b) <= 4, "request {i}: at most 4 breakpoints, got {}", breakpoints(b));
        let tools = b["tools"].as_array().unwrap();
        assert!(marked(tools.last().unwrap()), "request {i}: the last tool carries a breakpoint");
        assert!(tools[..tools.len() - 1].iter().all(|t| !marked(t)));
        assert!(marked(&b["system"][0]), "request {i}: the system prompt carries a breakpoint");
        let msgs = messages(b);
        assert!(marked(last_block(msgs.last().unwrap())), "request {i}: the newest message is marked");
        if msgs.len() >= 3 {
            // The previous request's newest message: this round reads everything up to it from the cache.
            assert!(marked(last_block(&msgs[msgs.len() - 3])), "request {i}: the previous newest is marked");
        }
        let expected = 2 + 1 + usize::from(msgs.len() >= 3);
        assert_eq!(breakpoints(b), expected, "request {i}: {b}");
    }
    // The prefix is byte-stable between rounds and the history is append-only.
    for pair in bodies.windows(2) {
        assert_eq!(pair[0]["tools"].to_string(), pair[1]["tools"].to_string());
        assert_eq!(pair[0]["system"].to_string(), pair[1]["system"].to_string());
        let (old, new) = (messages(&pair[0]), messages(&pair[1]));
        assert!(new.len() > old.len());
        for (a, b) in old.iter().zip(new.iter()) {
            assert_eq!(without_cache_control(a), without_cache_control(b), "history rewritten");
        }
    }
    assert!(system_text(&bodies[0]).contains(h.ws.path().to_str().unwrap()));
}

#[tokio::test]
async fn prompt_cache_off_sends_no_breakpoints() {
    let mut h = Harness::with(ProviderKind::Anthropic, script(), AgentConfig::default(), |p| ProviderConfig {
        prompt_cache: false,
        ..p
    })
    .await;
    h.run("look around").await;
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 3);
    for b in &bodies {
        assert_eq!(breakpoints(b), 0, "{b}");
        assert!(b["system"].is_string(), "a plain system prompt without caching");
    }
}

#[tokio::test]
async fn openai_requests_never_carry_cache_control() {
    let mut h = Harness::with(ProviderKind::Openai, script(), AgentConfig::default(), |p| p).await;
    h.run("look around").await;
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 3);
    for b in &bodies {
        assert_eq!(breakpoints(b), 0, "{b}");
    }
    // The prefix (system message and tools) is stable there too: such servers cache it by themselves.
    for pair in bodies.windows(2) {
        assert_eq!(pair[0]["tools"], pair[1]["tools"]);
        assert_eq!(pair[0]["messages"][0], pair[1]["messages"][0]);
    }
}

async fn simulated(kind: ProviderKind, prompt_cache: bool) -> Vec<Usage> {
    let options = MockOptions { simulate_usage: true, ..Default::default() };
    let mock = MockModel::start_with(script(), options).await.unwrap();
    let mut h = Harness::on(kind, mock, AgentConfig::default(), |p| ProviderConfig { prompt_cache, ..p });
    h.run("look around").await;
    h.events.usages().into_iter().map(|(round, _)| round).collect()
}

#[tokio::test]
async fn with_breakpoints_each_round_reads_the_history_before_it_from_the_cache() {
    let rounds = simulated(ProviderKind::Anthropic, true).await;
    assert_eq!(rounds.len(), 3);
    // The first request writes its whole prompt into the cache (everything ends at a breakpoint).
    assert_eq!(rounds[0].cache_read_tokens, 0);
    assert_eq!(rounds[0].cache_write_tokens, rounds[0].input_tokens);
    // Later rounds read the previous prompt and write only what is new.
    for pair in rounds.windows(2) {
        assert_eq!(pair[1].cache_read_tokens, pair[0].input_tokens, "{pair:?}");
        assert_eq!(pair[1].cache_read_tokens + pair[1].cache_write_tokens, pair[1].input_tokens, "{pair:?}");
        assert!(pair[1].cache_write_tokens < pair[1].cache_read_tokens, "{pair:?}");
    }
    // Without breakpoints nothing is cached and the prompt sizes are the same.
    let plain = simulated(ProviderKind::Anthropic, false).await;
    assert!(plain.iter().all(|u| u.cache_read_tokens == 0 && u.cache_write_tokens == 0), "{plain:?}");
    let sizes = |r: &[Usage]| r.iter().map(|u| u.input_tokens).collect::<Vec<_>>();
    let (cached, uncached) = (sizes(&rounds), sizes(&plain));
    // The breakpoints themselves are not prompt text: sizes agree within the markers' few characters.
    for (a, b) in cached.iter().zip(&uncached) {
        assert!(a.abs_diff(*b) <= 8, "{cached:?} vs {uncached:?}");
    }
}

#[tokio::test]
async fn openai_servers_cache_the_previous_prefix_by_themselves() {
    let rounds = simulated(ProviderKind::Openai, true).await;
    assert_eq!(rounds.len(), 3);
    assert_eq!(rounds[0].cache_read_tokens, 0);
    for pair in rounds.windows(2) {
        // The previous request's messages are a prefix of this one's: all of it is read from the cache.
        assert!(pair[1].cache_read_tokens > 0, "{pair:?}");
        assert!(pair[1].cache_read_tokens <= pair[0].input_tokens, "{pair:?}");
        assert!(pair[1].input_tokens > pair[0].input_tokens, "{pair:?}");
        assert_eq!(pair[1].cache_write_tokens, 0);
    }
}
