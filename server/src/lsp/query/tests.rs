//! EditorIntel against a client on the other end of the pipe: the query names the versions the editor
//! reported, the editor's wait stays within the caller's, a late answer is `not checked`, positions are
//! recoded from the negotiated encoding.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};
use tower_lsp_server::ls_types::Position;
use tower_lsp_server::{LspService, Server};

use super::*;
use crate::lsp::server::Backend;

/// The client's end: writes frames, reads the server's.
struct Peer {
    tx: WriteHalf<DuplexStream>,
    rx: BufReader<ReadHalf<DuplexStream>>,
}

impl Peer {
    async fn send(&mut self, v: Value) {
        let body = v.to_string();
        let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        self.tx.write_all(frame.as_bytes()).await.unwrap();
    }

    async fn next(&mut self) -> Value {
        let mut len = 0;
        loop {
            let mut line = String::new();
            self.rx.read_line(&mut line).await.unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(v) = line.strip_prefix("Content-Length: ") {
                len = v.parse().unwrap();
            }
        }
        let mut body = vec![0; len];
        self.rx.read_exact(&mut body).await.unwrap();
        serde_json::from_slice(&body).unwrap()
    }

    /// The next message with this method (others, notifications and the like, are skipped).
    async fn next_of(&mut self, method: &str) -> Value {
        loop {
            let v = self.next().await;
            if v["method"] == method {
                return v;
            }
        }
    }

    /// The answer to our request `id` (server requests met on the way get `null`).
    async fn answer(&mut self, id: i64) -> Value {
        loop {
            let v = self.next().await;
            if v["id"] == id && v.get("method").is_none() {
                return v;
            }
            if v.get("method").is_some() && v.get("id").is_some() {
                self.send(json!({"jsonrpc": "2.0", "id": v["id"], "result": null})).await;
            }
        }
    }
}

/// The test's folder, removed at the end.
struct Dir(PathBuf);
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A server with one folder and one open document (`version` 3), for a client offering `encodings`.
async fn start(encodings: &[&str], text: &str) -> (Peer, Arc<Shared>, PathBuf, String, Dir) {
    let dir = std::env::temp_dir().join(format!("stepwise-query-{}-{}", std::process::id(), rand_tag()));
    std::fs::create_dir_all(&dir).unwrap();
    let dir = std::fs::canonicalize(&dir).unwrap();
    let path = dir.join("a.py");
    std::fs::write(&path, text).unwrap();
    let slot: Arc<OnceLock<Arc<Shared>>> = Arc::default();
    let keep = slot.clone();
    let (service, socket) = LspService::build(move |client| {
        let backend = Backend::new(client);
        let _ = keep.set(backend.shared());
        backend
    })
    .finish();
    let (client_end, server_end) = tokio::io::duplex(1 << 20);
    let (server_rx, server_tx) = tokio::io::split(server_end);
    tokio::spawn(Server::new(server_rx, server_tx, socket).serve(service));
    let (rx, tx) = tokio::io::split(client_end);
    let mut peer = Peer { tx, rx: BufReader::new(rx) };
    let root = Uri::from_file_path(&dir).unwrap().as_str().to_string();
    let uri = Uri::from_file_path(&path).unwrap().as_str().to_string();
    peer.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "capabilities": {"general": {"positionEncodings": encodings}, "experimental": {"stepwise": {"query": true}}},
        "workspaceFolders": [{"uri": root, "name": "w"}],
    }}))
    .await;
    peer.answer(1).await;
    peer.send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}})).await;
    peer.send(json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
        "textDocument": {"uri": uri, "languageId": "python", "version": 3, "text": text},
    }}))
    .await;
    let shared = slot.get().unwrap().clone();
    // didOpen is handled in order with what follows: wait until the server has the document.
    for _ in 0..200 {
        if shared.texts.read(&path).is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(shared.caps().query, "the capability was read");
    (peer, shared, path, uri, Dir(dir))
}

fn rand_tag() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0);
    h.finish()
}

#[tokio::test]
async fn diagnostics_name_the_reported_version_and_come_back_in_utf16() {
    let text = "é = 1\nprint(y)\n";
    let (mut peer, shared, path, uri, _dir) = start(&["utf-8"], text).await;
    let intel = EditorIntel::new(shared);
    let req = DiagnosticsRequest { paths: vec![path.clone()], settle: true, max_wait: Duration::from_secs(4) };
    let asking = tokio::spawn(async move { intel.diagnostics(req).await });
    let q = peer.next_of("stepwise/query").await;
    let p = &q["params"];
    assert_eq!(p["kind"], "diagnostics");
    assert_eq!(p["documents"], json!([{"uri": uri, "version": 3}]));
    let wait = p["waitMs"].as_u64().unwrap();
    assert!((3000..4000).contains(&wait), "the editor waits less than the caller: {wait}");
    // `1` on the first line, in bytes (é is two): character 4; in UTF-16: 3.
    peer.send(json!({"jsonrpc": "2.0", "id": q["id"], "result": {"items": [{"uri": uri, "settled": true, "diagnostics": [
        {"range": {"start": {"line": 0, "character": 4}, "end": {"line": 0, "character": 5}}, "severity": 1, "message": "m"}
    ]}]}}))
    .await;
    let got = asking.await.unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].path, path);
    assert_eq!(got[0].checked, Checked::Yes);
    assert_eq!(got[0].diagnostics[0].range.start, Position { line: 0, character: 3 });
    assert_eq!(got[0].diagnostics[0].range.end, Position { line: 0, character: 4 });
}

#[tokio::test]
async fn a_late_answer_is_not_checked_by_the_editor_and_an_unsettled_one_too() {
    let (mut peer, shared, path, _, _dir) = start(&["utf-16"], "x = 1\n").await;
    let intel = Arc::new(EditorIntel::new(shared));
    let req = DiagnosticsRequest { paths: vec![path.clone()], settle: true, max_wait: Duration::from_millis(400) };
    let i = intel.clone();
    let started = std::time::Instant::now();
    let asking = tokio::spawn(async move { i.diagnostics(req).await });
    let unanswered = peer.next_of("stepwise/query").await;
    let allowed = Duration::from_millis(unanswered["params"]["waitMs"].as_u64().unwrap());
    let got = asking.await.unwrap();
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_secs(2), "bounded by the caller's wait: {elapsed:?}");
    assert_eq!(got.len(), 1);
    match &got[0].checked {
        Checked::No { who, waited } => {
            assert_eq!(who, "the editor");
            // The editor's wait and the margin ran out: what the question took, as it took it.
            assert!(*waited > allowed && *waited <= elapsed, "{allowed:?} < {waited:?} <= {elapsed:?}");
        }
        other => panic!("{other:?}"),
    }
    // The editor answers in time but its servers did not finish: not checked either, and the time said is the
    // time the question really took (the editor gave up at once), not the wait it was allowed.
    let req = DiagnosticsRequest { paths: vec![path.clone()], settle: true, max_wait: Duration::from_secs(10) };
    let i = intel.clone();
    let started = std::time::Instant::now();
    let asking = tokio::spawn(async move { i.diagnostics(req).await });
    let q = peer.next_of("stepwise/query").await;
    let allowed = Duration::from_millis(q["params"]["waitMs"].as_u64().unwrap());
    let uri = q["params"]["documents"][0]["uri"].clone();
    peer.send(json!({"jsonrpc": "2.0", "id": q["id"], "result": {"items": [{"uri": uri, "settled": false, "diagnostics": []}]}}))
        .await;
    let got = asking.await.unwrap();
    let elapsed = started.elapsed();
    match &got[0].checked {
        Checked::No { waited, .. } => {
            assert!(*waited <= elapsed, "no more than the question took: {waited:?} > {elapsed:?}");
            assert!(*waited < allowed, "the time really waited, not the {allowed:?} allowed: {waited:?}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn navigation_sends_the_position_in_the_negotiated_encoding_and_reads_links() {
    let (mut peer, shared, path, uri, _dir) = start(&["utf-8"], "é = f(1)\n").await;
    let intel = EditorIntel::new(shared);
    // `f` is UTF-16 column 4, byte column 5.
    let q = Query::Definition { path: path.clone(), position: Position { line: 0, character: 4 } };
    let asking = tokio::spawn(async move { intel.query(q).await });
    let q = peer.next_of("stepwise/query").await;
    assert_eq!(q["params"]["kind"], "definition");
    assert_eq!(q["params"]["uri"], uri);
    assert_eq!(q["params"]["position"], json!({"line": 0, "character": 5}));
    let r = json!({"start": {"line": 0, "character": 5}, "end": {"line": 0, "character": 6}});
    peer.send(json!({"jsonrpc": "2.0", "id": q["id"], "result": [
        {"targetUri": uri, "targetRange": r, "targetSelectionRange": r}
    ]}))
    .await;
    let Ok(Answer::Locations(locations)) = asking.await.unwrap() else { panic!("not locations") };
    assert_eq!(locations.len(), 1);
    assert_eq!(locations[0].range.start, Position { line: 0, character: 4 }, "back in UTF-16");
}

#[tokio::test]
async fn a_command_change_the_editor_has_not_reloaded_yet_is_asked_at_the_next_version() {
    let (mut peer, shared, path, uri, _dir) = start(&["utf-16"], "x = 1\n").await;
    let intel = Arc::new(EditorIntel::new(shared));
    let ask = |intel: Arc<EditorIntel>, path: PathBuf| {
        let req = DiagnosticsRequest { paths: vec![path], settle: true, max_wait: Duration::from_secs(4) };
        tokio::spawn(async move { intel.diagnostics(req).await })
    };
    // A command left other text on disk; the editor's document is still at version 3 with the old text: the
    // editor is asked for the version its reload will give, not for the old text's.
    intel.wrote(Written { path: path.clone(), before: None, text: Arc::from("x = 'one'\n") });
    let asking = ask(intel.clone(), path.clone());
    let q = peer.next_of("stepwise/query").await;
    assert_eq!(q["params"]["documents"], json!([{"uri": uri, "version": 4}]));
    peer.send(json!({"jsonrpc": "2.0", "id": q["id"], "result": {"items": []}})).await;
    asking.await.unwrap();
    // Asked again before the editor caught up (the `diagnostics` tool, then the round's end): still the next.
    let asking = ask(intel.clone(), path.clone());
    let q = peer.next_of("stepwise/query").await;
    assert_eq!(q["params"]["documents"], json!([{"uri": uri, "version": 4}]));
    peer.send(json!({"jsonrpc": "2.0", "id": q["id"], "result": {"items": []}})).await;
    asking.await.unwrap();
    // The text written is the document's (a file tool's edit the editor reported): its version as it is.
    intel.wrote(Written { path: path.clone(), before: None, text: Arc::from("x = 1\n") });
    let asking = ask(intel.clone(), path.clone());
    let q = peer.next_of("stepwise/query").await;
    assert_eq!(q["params"]["documents"], json!([{"uri": uri, "version": 3}]));
    peer.send(json!({"jsonrpc": "2.0", "id": q["id"], "result": {"items": []}})).await;
    asking.await.unwrap();
}

#[test]
fn a_closed_documents_wait_is_the_whole_cap_first_then_learned_and_short_after_one_ran_out() {
    let s = Duration::from_secs;
    let mut o = Opening::default();
    assert_eq!(o.wait(s(10)), s(10), "the first: the whole wait, its servers' start may be in it");
    assert_eq!(o.wait(s(4)), s(4), "never past the caller's");
    o.asked(Duration::from_millis(700), s(10), true);
    assert_eq!(o.wait(s(10)), Duration::from_millis(2800), "four times the longest answer");
    o.asked(s(5), s(10), true);
    assert_eq!(o.wait(s(10)), s(10), "at most 10 s");
    let mut never = Opening::default();
    never.asked(s(10), s(10), false);
    assert_eq!(never.wait(s(10)), s(2), "an editor that let one run out: 2 s until it answers");
    never.asked(Duration::from_millis(300), s(2), false);
    assert_eq!(never.wait(s(10)), s(2), "an answer, even unsettled, is learned (at least 2 s)");
}
