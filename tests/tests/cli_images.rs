//! `stepwise run --image FILE` (repeatable): the images go with the task, after its text; a file that
//! is not an image, or one past the limits, is a usage error before anything starts.

use std::process::Output;

use serde_json::json;
use stepwise_tests::images::{b64, png};
use stepwise_tests::mock::{MockModel, Step};
use stepwise_tests::terminal::Stepwise;
use stepwise_tests::TempDir;

async fn run(mock: &MockModel, ws: &TempDir, args: Vec<String>) -> Output {
    let cmd = Stepwise::with_model(mock).env("STEPWISE_SANDBOX", "off").arg("run").workspace(ws).args(args);
    let mut cmd = cmd.command();
    tokio::task::spawn_blocking(move || cmd.output().expect("stepwise runs")).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_with_images_sends_them_after_the_task() {
    let mock = MockModel::start(vec![Step::text("Two squares.")]).await;
    let (ws, elsewhere) = (TempDir::new("cli-images"), TempDir::new("cli-images-elsewhere"));
    let (a, b) = (png(2, 2, [255, 255, 0]), png(1, 1, [0, 0, 0]));
    std::fs::write(ws.join("a.png"), &a).unwrap();
    // The user's own file may lie anywhere: they named it themselves.
    std::fs::write(elsewhere.join("b.png"), &b).unwrap();
    let args = vec![
        "--image".to_string(),
        ws.join("a.png").display().to_string(),
        "--image".into(),
        elsewhere.join("b.png").display().to_string(),
        "what".into(),
        "are these?".into(),
    ];
    let out = run(&mock, &ws, args).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let image = |bytes: &[u8]| json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(bytes)}});
    let mut content = mock.requests()[0].body["messages"][0]["content"].clone();
    // The default prompt caching marks the last block; that is core_cache.rs's to check.
    content[2].as_object_mut().unwrap().remove("cache_control");
    assert_eq!(content, json!([{"type": "text", "text": "what are these?"}, image(&a), image(&b)]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_with_a_file_that_cannot_be_sent_is_a_usage_error() {
    let mock = MockModel::start(vec![Step::text("never")]).await;
    let ws = TempDir::new("cli-images-bad");
    std::fs::write(ws.join("notes.png"), "text, whatever its name").unwrap();
    std::fs::write(ws.join("tall.png"), png(1, 8001, [0, 0, 0])).unwrap();
    for (file, said) in [
        ("notes.png", "notes.png is not a PNG, JPEG, GIF or WebP image".to_string()),
        ("tall.png", "tall.png is 1x8001 pixels; models take images up to 8000 pixels a side".to_string()),
        ("missing.png", "missing.png: No such file or directory".to_string()),
    ] {
        let path = ws.join(file).display().to_string();
        let out = run(&mock, &ws, vec!["--image".into(), path.clone(), "look".into()]).await;
        assert_eq!(out.status.code(), Some(2), "{file}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with(&format!("stepwise run: {}", path.trim_end_matches(file))), "{err}");
        assert!(err.contains(&said), "{file}: {err}");
    }
    assert!(mock.requests().is_empty(), "nothing was sent");
}
