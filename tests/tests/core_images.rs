//! Images through the engine against the scripted model: `read_file` of an image and a prompt's images
//! on both wire formats (the exact JSON each sends), the limits refused with why, a model that refuses
//! images (a clear error, the next request without them), compaction and prompt caching with images in
//! the history.

mod common;

use common::*;
use serde_json::{json, Value};
use stepwise::agent::{AgentConfig, RunOutcome};
use stepwise::llm::{Image, ProviderKind};
use stepwise_tests::images::{b64, png};
use stepwise_tests::mock::{HttpError, Step};

const REMOVED: &str = "[image removed: the model does not accept images]";

/// A run of `prompt` with `images` (what an adapter sets on the ticket).
async fn run_with_images(h: &Harness, prompt: &str, images: Vec<Image>) -> RunOutcome {
    let mut ticket = h.work.begin().expect("no run in progress");
    ticket.images = images;
    let run = h.work.prompt(&ticket, prompt, &h.llm, &h.host, &h.events, &h.cfg);
    tokio::time::timeout(std::time::Duration::from_secs(30), run).await.expect("the run did not finish in 30 s")
}

fn image(bytes: &[u8]) -> Image {
    stepwise::images::check("shot", bytes).unwrap().image
}

fn anthropic_source(bytes: &[u8]) -> Value {
    json!({"type": "base64", "media_type": "image/png", "data": b64(bytes)})
}

fn data_url(bytes: &[u8]) -> Value {
    json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{}", b64(bytes))}})
}

#[tokio::test]
async fn an_image_read_by_read_file_reaches_the_model_on_both_wire_formats() {
    let shot = png(4, 3, [200, 30, 30]);
    for kind in [ProviderKind::Anthropic, ProviderKind::Openai] {
        let script = vec![
            call("read_file", json!({"path": "shot.png"})),
            // Recognised by its bytes, not its name: a PNG named .txt is an image, a .png of text is text.
            call("read_file", json!({"path": "really-an-image.txt"})),
            call("read_file", json!({"path": "not-an-image.png"})),
            Step::text("a red rectangle"),
        ];
        let mut h = Harness::with(kind, script, AgentConfig::default(), |p| p).await;
        std::fs::write(h.ws.path().join("shot.png"), &shot).unwrap();
        std::fs::write(h.ws.path().join("really-an-image.txt"), &shot).unwrap();
        std::fs::write(h.ws.path().join("not-an-image.png"), "just text").unwrap();
        let out = h.run("what is in shot.png?").await;
        assert_eq!(out.reason, FinishReason::EndTurn, "{:?}", out.error);
        let said = |name: &str| format!("Image {name} (image/png, 4x3, 1 KB) follows.");
        let (first, second, third) = (h.body(1), h.body(2), h.body(3));
        match kind {
            ProviderKind::Anthropic => {
                let id = tool_uses(&messages(&first)[1])[0].0.clone();
                assert_eq!(
                    messages(&first)[2],
                    json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": [
                        {"type": "text", "text": said("shot.png")},
                        {"type": "image", "source": anthropic_source(&shot)}]}]})
                );
                assert_eq!(last_message(&second)["content"][0]["content"][0]["text"], said("really-an-image.txt"));
                assert_eq!(result_texts(&third), ["just text"]);
                assert_valid_conversation(&third);
            }
            ProviderKind::Openai => {
                let m = messages(&first);
                let id = m[2]["tool_calls"][0]["id"].clone();
                assert_eq!(m[3], json!({"role": "tool", "tool_call_id": id, "content": said("shot.png")}));
                assert_eq!(m[4], json!({"role": "user", "content": [data_url(&shot)]}));
                assert_eq!(m.len(), 5, "{first}");
                let m = messages(&third);
                assert_eq!(m[m.len() - 2]["content"], "just text", "{third}");
            }
        }
    }
}

#[tokio::test]
async fn a_prompts_images_follow_its_text_on_both_wire_formats() {
    let (a, b) = (png(2, 2, [0, 0, 255]), png(3, 1, [0, 255, 0]));
    for kind in [ProviderKind::Anthropic, ProviderKind::Openai] {
        let h = Harness::with(kind, vec![Step::text("blue, then green")], AgentConfig::default(), |p| p).await;
        let out = run_with_images(&h, "compare these", vec![image(&a), image(&b)]).await;
        assert_eq!(out.reason, FinishReason::EndTurn, "{:?}", out.error);
        let body = h.body(0);
        let want = match kind {
            ProviderKind::Anthropic => json!([{"role": "user", "content": [
                {"type": "text", "text": "compare these"},
                {"type": "image", "source": anthropic_source(&a)},
                {"type": "image", "source": anthropic_source(&b)}]}]),
            ProviderKind::Openai => json!([
                {"role": "system", "content": body["messages"][0]["content"]},
                {"role": "user", "content": [
                    {"type": "text", "text": "compare these"}, data_url(&a), data_url(&b)]}]),
        };
        assert_eq!(body["messages"], want);
    }
    // A prompt of images alone has no (empty) text block.
    let h = Harness::new(vec![Step::text("a dot")]).await;
    run_with_images(&h, "", vec![image(&a)]).await;
    assert_eq!(h.body(0)["messages"][0]["content"], json!([{"type": "image", "source": anthropic_source(&a)}]));
}

#[tokio::test]
async fn an_image_past_the_limits_is_refused_saying_why() {
    let mut h = Harness::new(vec![
        call("read_file", json!({"path": "wide.png"})),
        call("read_file", json!({"path": "huge.png"})),
        Step::text("ok"),
    ])
    .await;
    std::fs::write(h.ws.path().join("wide.png"), png(8001, 2, [1, 2, 3])).unwrap();
    // 3.75 MB of pixels and more: past the size limit.
    std::fs::write(h.ws.path().join("huge.png"), png(1200, 1100, [9, 9, 9])).unwrap();
    h.run("look").await;
    let wide = results(&h.body(1));
    assert!(wide[0].2, "an error result");
    assert_eq!(
        wide[0].1,
        "Error: wide.png is 8001x2 pixels; models take images up to 8000 pixels a side (Anthropic's limit); stepwise does not scale images down: make it smaller first (for example `magick in.png -resize 50% out.png`)"
    );
    let huge = results(&h.body(2));
    assert!(
        huge[0].2 && huge[0].1.starts_with("Error: huge.png is an image of 3.8 MB; models take images up to 3.75 MB"),
        "{huge:?}"
    );
    assert!(!h.bodies().iter().any(|b| b.to_string().contains("\"image\"")), "no image was sent");
}

#[tokio::test]
async fn a_model_that_refuses_images_gets_a_clear_error_and_the_conversation_goes_on_without_them() {
    let shot = png(2, 2, [5, 5, 5]);
    for kind in [ProviderKind::Anthropic, ProviderKind::Openai] {
        // A text-only model behind Anthropic's API: 400; llama.cpp without its vision projector: 500, which
        // is not retried either.
        let (refused, said) = match kind {
            ProviderKind::Anthropic => (
                HttpError::new(400).body(json!({"type": "error", "error": {"type": "invalid_request_error",
                    "message": "messages.0.content.1: this model does not support image input"}})),
                "this model does not support image input",
            ),
            ProviderKind::Openai => (
                HttpError::new(500).body(json!({"error": {"code": 500, "type": "server_error",
                    "message": "image input is not supported - hint: if this is unexpected, you may need to provide the mmproj"}})),
                "image input is not supported",
            ),
        };
        let script = vec![call("read_file", json!({"path": "shot.png"})), refused.into(), Step::text("fine")];
        let mut h = Harness::with(kind, script, AgentConfig::default(), |p| p).await;
        std::fs::write(h.ws.path().join("shot.png"), &shot).unwrap();
        let out = run_with_images(&h, "what is this?", vec![image(&shot)]).await;
        assert_eq!(out.reason, FinishReason::Error);
        let e = out.error.unwrap();
        assert!(e.starts_with("the model did not accept images ("), "{e}");
        assert!(e.contains(said), "{e}");
        assert!(e.ends_with(&format!("the 2 images of this conversation became the note \"{REMOVED}\": send your prompt again without images, or choose a model that accepts them")), "{e}");
        assert_eq!(h.mock.requests().len(), 2, "the refusal is not retried");
        // The next prompt: the same conversation, no image in it, each where it was said so.
        let out = h.run("describe it from the file name then").await;
        assert_eq!(out.reason, FinishReason::EndTurn, "{:?}", out.error);
        let body = h.body(2);
        assert!(!body.to_string().contains(&b64(&shot)), "no image is sent any more: {body}");
        match kind {
            ProviderKind::Anthropic => {
                assert_valid_conversation(&body);
                let m = messages(&body);
                assert_eq!(texts(&m[0]), ["what is this?", REMOVED]);
                assert_eq!(
                    tool_results(&m[2])[0].1,
                    format!("Image shot.png (image/png, 2x2, 1 KB) follows.\n{REMOVED}")
                );
                assert_eq!(texts(&m[2]), ["describe it from the file name then"]);
            }
            ProviderKind::Openai => {
                let m = messages(&body);
                assert_eq!(m[1], json!({"role": "user", "content": format!("what is this?\n\n{REMOVED}")}));
                assert!(m[3]["content"].as_str().unwrap().ends_with(REMOVED), "{}", m[3]);
                assert_eq!(m[4], json!({"role": "user", "content": "describe it from the file name then"}));
            }
        }
        // What is saved is the conversation as sent.
        assert_eq!(stepwise::images::count(&h.session().await.messages), 0);
    }
}

#[tokio::test]
async fn an_image_counts_as_an_image_for_compaction_and_a_compaction_keeps_it_valid() {
    // 300 KB of PNG: some 100,000 tokens if its base64 were counted as text, past 85% of this window.
    let big = png(330, 300, [40, 80, 120]);
    let cfg = AgentConfig::default();
    let too_long = HttpError::new(400).body(json!({"type": "error", "error": {"type": "invalid_request_error",
        "message": "prompt is too long: 30000 tokens > 20000 maximum"}}));
    let script = vec![
        call("read_file", json!({"path": "big.png"})),
        Step::text("a blue-grey picture"),
        too_long.into(),
        Step::text("SUMMARY: the user showed a blue-grey picture"),
        Step::text("still blue-grey"),
    ];
    let mut h = Harness::with(ProviderKind::Anthropic, script, cfg, |p| stepwise::llm::ProviderConfig {
        context_window: 20_000,
        ..p
    })
    .await;
    std::fs::write(h.ws.path().join("big.png"), &big).unwrap();
    let out = run_with_images(&h, "look at this and big.png", vec![image(&big)]).await;
    assert_eq!(out.reason, FinishReason::EndTurn, "{:?}", out.error);
    assert!(
        !h.events.events().iter().any(|e| matches!(e, Ev::Compacted { .. })),
        "two images are not 200,000 tokens: no compaction"
    );
    // The provider says it is too long: a summary (the images in what it reads), then the request again.
    let out = h.run("and now?").await;
    assert_eq!(out.reason, FinishReason::EndTurn, "{:?}", out.error);
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 5);
    assert_valid_conversation(&bodies[3]);
    assert!(bodies[3].to_string().contains(&b64(&big)), "the summary is made from the conversation with its images");
    assert_valid_conversation(&bodies[4]);
    let compacted: Vec<Ev> = h.events.events().into_iter().filter(|e| matches!(e, Ev::Compacted { .. })).collect();
    let [Ev::Compacted { after, error: None, .. }] = compacted.as_slice() else { panic!("{compacted:?}") };
    assert!(*after < 5_000, "the estimate after counts what is left, images as images: {after}");
}

#[tokio::test]
async fn prompt_caching_keeps_the_prefix_stable_with_images_in_the_history() {
    let shot = png(2, 2, [1, 1, 1]);
    let script = vec![
        call("read_file", json!({"path": "shot.png"})),
        call("bash", json!({"command": "echo more"})),
        Step::text("done"),
    ];
    let h = Harness::with(ProviderKind::Anthropic, script, AgentConfig::default(), |p| stepwise::llm::ProviderConfig {
        prompt_cache: true,
        ..p
    })
    .await;
    std::fs::write(h.ws.path().join("shot.png"), &shot).unwrap();
    run_with_images(&h, "look", vec![image(&shot)]).await;
    let b = h.bodies();
    // The first request's breakpoint sits on the prompt's image.
    assert_eq!(
        messages(&b[0])[0]["content"][1],
        json!({"type": "image", "source": anthropic_source(&shot), "cache_control": {"type": "ephemeral"}})
    );
    // A tool result with an image carries one too, after its image.
    let result = &messages(&b[1])[2]["content"][0];
    assert_eq!(result["cache_control"], json!({"type": "ephemeral"}));
    assert_eq!(result["content"][1]["source"], anthropic_source(&shot));
    // Each request starts with the one before it, breakpoints aside: what was cached is read again.
    for pair in b.windows(2) {
        let (before, after) = (without_breakpoints(&pair[0]["messages"]), without_breakpoints(&pair[1]["messages"]));
        let n = before.as_array().unwrap().len();
        assert_eq!(before.as_array().unwrap()[..], after.as_array().unwrap()[..n]);
    }
}

fn without_breakpoints(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter().filter(|(k, _)| *k != "cache_control").map(|(k, v)| (k.clone(), without_breakpoints(v))).collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_breakpoints).collect()),
        other => other.clone(),
    }
}
