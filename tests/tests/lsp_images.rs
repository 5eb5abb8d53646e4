//! Images over the LSP sidecar: `stepwise.run`'s `images` (a file of the workspace, or base64) reach the
//! model after the prompt's text; `stepwise.conversation` shows them by id and `stepwise.image` gives
//! them; the saved session keeps each once, by content, beside it, and a reloaded server has them
//! again; an image that cannot be taken is the request's error and starts no run.

use std::time::Duration;

use serde_json::{json, Value};
use stepwise_tests::images::{b64, png};
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::{MockModel, Step};

const T: Duration = Duration::from_secs(10);

fn source(bytes: &[u8]) -> Value {
    json!({"type": "base64", "media_type": "image/png", "data": b64(bytes)})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_a_prompts_images_reach_the_model_and_are_there_again_after_a_reload() {
    let (dir, state) = folder_and_state("lsp-images");
    let (shot, pasted) = (png(6, 4, [220, 20, 60]), png(3, 3, [30, 144, 255]));
    std::fs::write(dir.join("shot.png"), &shot).unwrap();
    let mock = MockModel::start(vec![Step::text("A red box and a blue one."), Step::text("Still both.")]).await;
    let first = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).start().await;
    let ws = first.folder_uri(0);
    let images = json!([{"path": "shot.png"}, {"mediaType": "image/png", "data": b64(&pasted)}]);
    let r = first.execute("stepwise.run", json!({"prompt": "what is wrong here?", "images": images})).await.unwrap();
    let run = first.await_run(&ws, r["runId"].as_str().unwrap(), T).await;
    assert_eq!(run.reason(), "end_turn");
    let sent = &mock.requests()[0].body;
    assert_eq!(
        sent["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "what is wrong here?"},
            {"type": "image", "source": source(&shot)},
            {"type": "image", "source": source(&pasted)}]}])
    );
    // The view's entry: the prompt with its images by id, each fetched whole.
    assert_eq!(shown(&first).await, [b64(&shot), b64(&pasted)]);
    let missing = first.execute("stepwise.image", json!({"id": "0000000000000000"})).await.unwrap_err();
    assert!(missing.message.contains("no image 0000000000000000 in the conversation"), "{}", missing.message);
    first.finish().await;

    // Saved once each, by content, beside the session; the session names them.
    let saved: Vec<_> = std::fs::read_dir(state.path()).unwrap().map(|e| e.unwrap().path()).collect();
    let file = saved.iter().find(|p| p.extension().is_some_and(|x| x == "json")).expect("a session file");
    let text = std::fs::read_to_string(file).unwrap();
    assert!(!text.contains(&b64(&shot)) && !text.contains(&b64(&pasted)), "no base64 in {text}");
    let mut beside: Vec<Vec<u8>> = std::fs::read_dir(file.with_extension("images"))
        .unwrap()
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    beside.sort_by_key(|b| b.len());
    assert_eq!(beside, [pasted.clone(), shot.clone()], "each image once, as its own bytes");

    // A new server on the same folder: the conversation shows them, and the model is sent them again.
    let second = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).start().await;
    assert_eq!(shown(&second).await, [b64(&shot), b64(&pasted)]);
    assert_eq!(second.run("and now?").await.reason(), "end_turn");
    let sent = &mock.requests()[1].body;
    assert_eq!(sent["messages"][0]["content"][1]["source"], source(&shot));
    assert_eq!(sent["messages"][0]["content"][2]["source"], source(&pasted));
    assert_valid_conversation(sent);
    second.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_an_image_that_cannot_be_taken_is_the_requests_error_and_starts_no_run() {
    let (dir, state) = folder_and_state("lsp-images-bad");
    dir.write("notes.txt", "plain text");
    std::fs::write(dir.join("wide.png"), png(8001, 1, [0, 0, 0])).unwrap();
    let mock = MockModel::start(vec![Step::text("fine")]).await;
    let editor = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).start().await;
    assert_eq!(
        refused(&editor, json!([{"path": "../elsewhere.png"}])).await,
        "stepwise.run: Path escapes workspace: ../elsewhere.png"
    );
    assert_eq!(
        refused(&editor, json!([{"path": "notes.txt"}])).await,
        "stepwise.run: notes.txt is not a PNG, JPEG, GIF or WebP image"
    );
    assert!(refused(&editor, json!([{"path": "wide.png"}]))
        .await
        .contains("wide.png is 8001x1 pixels; models take images up to 8000 pixels a side"));
    let wrong = json!([{"mediaType": "image/jpeg", "data": b64(&png(1, 1, [0, 0, 0]))}]);
    assert_eq!(
        refused(&editor, wrong).await,
        "stepwise.run: image 1 was given as image/jpeg, but its bytes are an image/png image"
    );
    assert!(refused(&editor, json!([{"mediaType": "image/png", "data": "%%%"}]))
        .await
        .starts_with("stepwise.run: image 1 is not valid base64"));
    let many: Vec<Value> = (0..21).map(|_| json!({"path": "notes.txt"})).collect();
    assert_eq!(refused(&editor, json!(many)).await, "stepwise.run: a prompt takes at most 20 images, not 21");
    // No run started: the folder takes the next prompt, and it is the model's first request.
    assert_eq!(editor.run("look without").await.reason(), "end_turn");
    assert_eq!(mock.requests().len(), 1);
    editor.finish().await;
}

/// The first entry of the conversation (the prompt) and its images' base64, each fetched by its id.
async fn shown(editor: &TestEditor) -> Vec<String> {
    let conv = editor.execute("stepwise.conversation", json!({})).await.unwrap();
    let user = &conv["entries"][0];
    assert_eq!((&user["kind"], &user["text"]), (&json!("user"), &json!("what is wrong here?")), "{conv}");
    let images = user["images"].as_array().unwrap_or_else(|| panic!("no images: {conv}"));
    let mut got = Vec::new();
    for i in images {
        assert_eq!(i["mediaType"], "image/png");
        let data = editor.execute("stepwise.image", json!({"id": i["id"]})).await.unwrap();
        assert_eq!(data["mediaType"], "image/png");
        got.push(data["data"].as_str().unwrap().to_string());
    }
    got
}

/// `stepwise.run` with `images`, refused: its message.
async fn refused(editor: &TestEditor, images: Value) -> String {
    let e = editor.execute("stepwise.run", json!({"prompt": "look", "images": images})).await.unwrap_err();
    assert_eq!(e.code, -32602, "InvalidParams: {}", e.message);
    e.message
}
