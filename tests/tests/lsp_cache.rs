//! The sidecar's `promptCache` setting: on by default (breakpoints in every Anthropic request), off when set.

use std::time::Duration;

use serde_json::{json, Value};
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::{MockModel, Step};

const T: Duration = Duration::from_secs(10);

fn breakpoints(v: &Value) -> usize {
    match v {
        Value::Object(m) => usize::from(m.contains_key("cache_control")) + m.values().map(breakpoints).sum::<usize>(),
        Value::Array(a) => a.iter().map(breakpoints).sum(),
        _ => 0,
    }
}

async fn breakpoints_sent(prompt_cache: Option<bool>) -> usize {
    let (dir, state) = folder_and_state("cache");
    let mock = MockModel::start(vec![Step::text("ok")]).await;
    let mut b = editor(ClientPreset::VsCode, &dir, &state, &mock).ignore(&TRANSCRIPT);
    b = match prompt_cache {
        Some(on) => b.option("promptCache", json!(on)),
        None => b.without_option("promptCache"),
    };
    let ed = b.start().await;
    assert_eq!(ed.run("hello").await.reason(), "end_turn");
    let reqs = mock.wait_for_requests(1, T).await;
    breakpoints(&reqs[0].body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_prompt_cache_is_on_by_default_and_the_setting_turns_it_off() {
    // Tools, system prompt, the newest message.
    assert_eq!(breakpoints_sent(None).await, 3);
    assert_eq!(breakpoints_sent(Some(true)).await, 3);
    assert_eq!(breakpoints_sent(Some(false)).await, 0);
}
