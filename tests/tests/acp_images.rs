//! Images over ACP: the agent declares `promptCapabilities.image`; a prompt's `image` blocks reach the
//! model after its text; one that cannot be taken is the prompt's error; a loaded session tells its
//! images again (`user_message_chunk`s of image content).

use serde_json::{json, Value};
use stepwise_tests::acp_agent::ScriptedAgent;
use stepwise_tests::images::{b64, png};
use stepwise_tests::mock::{MockModel, Step};

async fn prompt(client: &mut stepwise_tests::acp_client::AcpClient, sid: &str, blocks: Value) -> Value {
    let id = client.request("session/prompt", json!({"sessionId": sid, "prompt": blocks})).await;
    client.response(id).await
}

#[tokio::test]
async fn an_image_block_reaches_the_model_and_a_loaded_session_shows_it_again() {
    let shot = png(5, 2, [10, 200, 10]);
    let mock = MockModel::start(vec![Step::text("A green bar."), Step::text("fine")]).await;
    let agent = ScriptedAgent::new("acp-images", mock);
    let mut first = agent.spawn();
    let init = first.initialize(false, false).await;
    assert_eq!(init["agentCapabilities"]["promptCapabilities"]["image"], true, "{init}");
    let sid = first.new_session(agent.ws.path()).await;
    let image = json!({"type": "image", "mimeType": "image/png", "data": b64(&shot)});
    let r = prompt(&mut first, &sid, json!([{"type": "text", "text": "what colour?"}, image])).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert_eq!(
        agent.mock.requests()[0].body["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "what colour?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(&shot)},
             "cache_control": {"type": "ephemeral"}}]}])
    );
    // Not an image: the prompt's error, and nothing is sent.
    let bad = json!({"type": "image", "mimeType": "image/png", "data": b64(b"GIF89a\x01\x00\x01\x00\x00\x00\x00")});
    let r = prompt(&mut first, &sid, json!([{"type": "text", "text": "and this?"}, bad])).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert_eq!(r["error"]["message"], "image 1 was given as image/png, but its bytes are an image/gif image", "{r}");
    assert_eq!(agent.mock.requests().len(), 1);
    first.close_stdin();
    assert_eq!(first.wait_exit().await, Some(0));

    // The next process loads the session: the prompt is told again with its image.
    let mut second = agent.initialized().await;
    let from = second.received.len();
    second.call("session/load", json!({"sessionId": sid, "cwd": agent.ws.path(), "mcpServers": []})).await;
    let told: Vec<Value> = second
        .updates_since(from)
        .into_iter()
        .filter(|u| u["sessionUpdate"] == "user_message_chunk")
        .map(|u| u["content"].clone())
        .collect();
    assert_eq!(told[0], json!({"type": "text", "text": "what colour?"}));
    assert_eq!(
        (&told[1]["type"], &told[1]["mimeType"], &told[1]["data"]),
        (&json!("image"), &json!("image/png"), &json!(b64(&shot)))
    );
    // And the model is sent it again with the next prompt.
    let r = prompt(&mut second, &sid, json!([{"type": "text", "text": "sure?"}])).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert_eq!(agent.mock.requests()[1].body["messages"][0]["content"][1]["source"]["data"], b64(&shot));
}
