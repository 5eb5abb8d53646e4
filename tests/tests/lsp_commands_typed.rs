//! `workspace/executeCommand` arguments are parsed once, per command: a malformed one is an invalid-params
//! error naming the command and the field, and the server goes on serving.

use serde_json::json;
use stepwise_tests::lsp_client::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_a_malformed_command_argument_names_the_command_and_the_field() {
    let (dir, state) = folder_and_state("typed-commands");
    let mut ed = TestEditor::builder(ClientPreset::VsCode).folder(dir.path()).state_dir(state.path()).connect().await;
    ed.initialize().await.unwrap();

    let e = ed.execute("stepwise.rewind", json!({"checkpoint": "1", "restore": "everything"})).await.unwrap_err();
    assert_eq!(e.code, -32602, "{e}");
    assert!(e.message.starts_with("stepwise.rewind: \"restore\": unknown variant \"everything\""), "{e}");
    let e =
        ed.execute("stepwise.review", json!({"path": "a.txt", "action": "keep", "hunks": ["x"]})).await.unwrap_err();
    assert_eq!(e.code, -32602, "{e}");
    assert!(e.message.starts_with("stepwise.review: \"hunks\": invalid type: string \"x\""), "{e}");
    let e = ed.execute("stepwise.run", json!({"workspace": ed.folder_uri(0)})).await.unwrap_err();
    assert_eq!((e.code, e.message.as_str()), (-32602, "stepwise.run: missing field \"prompt\""), "{e}");
    let e =
        ed.execute("stepwise.editPlan", json!({"items": [{"text": "a"}], "baseRevision": "new"})).await.unwrap_err();
    assert!(e.message.starts_with("stepwise.editPlan: \"baseRevision\": invalid type"), "{e}");
    let e = ed.execute("stepwise.plan", json!("file:///w")).await.unwrap_err();
    assert!(e.message.starts_with("stepwise.plan: its argument is an object"), "{e}");

    // Nothing changed, and the server still answers.
    let plan = ed.execute("stepwise.plan", json!({})).await.unwrap();
    assert_eq!((plan["total"].as_u64(), plan["revision"].as_u64()), (Some(0), Some(0)), "{plan}");
    ed.finish().await;
}
