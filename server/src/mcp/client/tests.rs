//! The client against a server the test plays line by line (stdio framing over an in-memory pipe), and
//! the event-stream parser against streams cut at every byte.

use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf};

use super::rpc::Error;
use super::sse::{Events, TooLarge};
use super::stdio::{top_level_id, MAX_LINE};
use super::Client;

/// The server's end of the pipe.
struct Server {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    out: WriteHalf<DuplexStream>,
}

impl Server {
    /// The next message the client wrote.
    async fn next(&mut self) -> Value {
        let line = self.lines.next_line().await.unwrap().expect("the client closed the pipe");
        serde_json::from_str(&line).unwrap()
    }

    async fn raw(&mut self, bytes: &[u8]) {
        self.out.write_all(bytes).await.unwrap();
    }

    async fn send(&mut self, msg: Value) {
        self.raw(format!("{msg}\n").as_bytes()).await;
    }

    async fn answer(&mut self, request: &Value, result: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": result})).await;
    }

    /// A tool's result whose text is `text`.
    async fn answer_text(&mut self, request: &Value, text: &str) {
        self.answer(request, json!({"content": [{"type": "text", "text": text}]})).await;
    }
}

fn connect() -> (Client, Server) {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(ours);
    let (lines, out) = tokio::io::split(theirs);
    (Client::stdio(read, write, "fake"), Server { lines: BufReader::new(lines).lines(), out })
}

fn text(r: Result<super::CallResult, Error>) -> String {
    let r = r.unwrap();
    r.content[0]["text"].as_str().unwrap().to_string()
}

/// Fails the test rather than hanging it, should a call never end.
async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), f).await.expect("no end within 20 s")
}

/// Calls the tool `t` while the server plays `serve`.
async fn call_while(client: &Client, serve: impl std::future::Future<Output = ()>) -> Result<super::CallResult, Error> {
    within(async { tokio::join!(client.call_tool("t", Map::new()), serve).0 }).await
}

#[tokio::test]
async fn the_handshake_says_who_the_client_is_and_takes_any_version() {
    let (client, mut server) = connect();
    let serve = async {
        let init = server.next().await;
        assert_eq!(init["method"], "initialize");
        assert_eq!(
            init["params"],
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "stepwise", "version": env!("CARGO_PKG_VERSION")}
            })
        );
        server.answer(&init, json!({"protocolVersion": "2024-11-05", "capabilities": {}})).await;
        let done = server.next().await;
        assert_eq!(done["method"], "notifications/initialized");
        assert!(done.get("id").is_none(), "{done}");
    };
    let (ok, ()) = within(async { tokio::join!(client.initialize(), serve) }).await;
    ok.unwrap();
}

#[tokio::test]
async fn tool_lists_are_read_page_by_page() {
    let (client, mut server) = connect();
    let serve = async {
        let first = server.next().await;
        assert_eq!((&first["method"], &first["params"]), (&json!("tools/list"), &json!({})));
        let tools = json!([{"name": "a", "description": "A.", "inputSchema": {"type": "object"}}, {"name": "b"}]);
        server.answer(&first, json!({"tools": tools, "nextCursor": "p2"})).await;
        let second = server.next().await;
        assert_eq!(second["params"], json!({"cursor": "p2"}));
        server.answer(&second, json!({"tools": [{"description": "no name"}], "nextCursor": "p3"})).await;
        let third = server.next().await;
        assert_eq!(third["params"], json!({"cursor": "p3"}));
        server.answer(&third, json!({"tools": [{"name": "c"}]})).await;
    };
    let (tools, ()) = within(async { tokio::join!(client.list_tools(), serve) }).await;
    let tools = tools.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert_eq!(tools[0].description.as_deref(), Some("A."));
    assert_eq!(tools[0].input_schema, json!({"type": "object"}).as_object().cloned().unwrap());
    assert_eq!((tools[1].description.clone(), tools[1].input_schema.len()), (None, 0));
}

#[tokio::test]
async fn lines_not_json_and_lines_too_long_are_skipped_and_the_session_goes_on() {
    let (client, mut server) = connect();
    let serve = async {
        let call = server.next().await;
        server.raw(b"a banner, not JSON\n\n{\"jsonrpc\": 7}\n").await;
        // Over the limit, and no id at its ends: skipped, and nothing waits on it.
        let huge = vec![b'x'; MAX_LINE + 1000];
        server.raw(&huge).await;
        server.raw(b"\n").await;
        server.answer_text(&call, "still here").await;
    };
    assert_eq!(text(call_while(&client, serve).await), "still here");
}

#[tokio::test]
async fn an_answer_too_large_to_read_fails_its_call_at_once_and_the_next_call_works() {
    let (client, mut server) = connect();
    let serve = async {
        let call = server.next().await;
        let big = "y".repeat(MAX_LINE);
        server.answer_text(&call, &big).await;
        let next = server.next().await;
        server.answer_text(&next, "small").await;
    };
    let calls = async {
        let first = client.call_tool("big", Map::new()).await;
        (first, client.call_tool("small", Map::new()).await)
    };
    let ((first, second), ()) = within(async { tokio::join!(calls, serve) }).await;
    assert_eq!(first.unwrap_err(), Error::Failed("its answer was larger than 16 MiB".into()));
    assert_eq!(text(second), "small");
}

#[test]
fn the_id_of_a_message_too_large_is_read_from_either_end() {
    let (start, end) = (br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"id":3"#, br#"xxxx"}]}}"#);
    assert_eq!(top_level_id(start, end), Some(7));
    let (start, end) = (br#"{"result":{"content":[{"id":3,"text":"xx"#, br#"xx"}],"id":4},"jsonrpc":"2.0","id":12}"#);
    assert_eq!(top_level_id(start, &end[..]), Some(12));
    let (start, end) = (br#"{"result":{"content":[{"id":3,"text":"xx"#, br#"xx"}],"id":4}}"#);
    assert_eq!(top_level_id(start, end), None, "nested ids are not the message's");
    assert_eq!(top_level_id(b"xxxxxxxx", b"xxxxxxxx"), None);
}

#[tokio::test]
async fn answers_in_any_order_reach_their_calls() {
    let (client, mut server) = connect();
    let serve = async {
        let (a, b) = (server.next().await, server.next().await);
        let (a, b) = if a["params"]["name"] == "a" { (a, b) } else { (b, a) };
        server.send(json!({"jsonrpc": "2.0", "id": 999, "result": {}})).await;
        server.answer_text(&b, "for b").await;
        server.answer_text(&a, "for a").await;
    };
    let (ra, rb, ()) =
        within(async { tokio::join!(client.call_tool("a", Map::new()), client.call_tool("b", Map::new()), serve) })
            .await;
    assert_eq!((text(ra), text(rb)), ("for a".to_string(), "for b".to_string()));
}

#[tokio::test]
async fn a_server_that_dies_ends_every_waiting_call_at_once() {
    let (client, mut server) = connect();
    let serve = async move {
        server.next().await;
        server.next().await;
        // Both calls are in; the server goes (its pipe ends).
        drop(server);
    };
    let (ra, rb, ()) =
        within(async { tokio::join!(client.call_tool("a", Map::new()), client.call_tool("b", Map::new()), serve) })
            .await;
    let gone = Error::Closed("it closed its stdout".into());
    assert_eq!((ra.unwrap_err(), rb.unwrap_err()), (gone.clone(), gone.clone()));
    assert_eq!(within(client.call_tool("c", Map::new())).await.unwrap_err(), gone);
}

#[tokio::test]
async fn the_servers_requests_mid_call_are_answered() {
    let (client, mut server) = connect();
    let serve = async {
        let call = server.next().await;
        server.send(json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "hi"}})).await;
        server.send(json!({"jsonrpc": "2.0", "id": "s1", "method": "ping"})).await;
        assert_eq!(server.next().await, json!({"jsonrpc": "2.0", "id": "s1", "result": {}}));
        server.send(json!({"jsonrpc": "2.0", "id": 5, "method": "sampling/createMessage", "params": {}})).await;
        let refused = server.next().await;
        assert_eq!((&refused["id"], &refused["error"]["code"]), (&json!(5), &json!(-32601)), "{refused}");
        server.answer_text(&call, "done").await;
    };
    assert_eq!(text(call_while(&client, serve).await), "done");
}

#[tokio::test]
async fn a_call_given_up_is_cancelled_on_the_server() {
    let (client, mut server) = connect();
    let mut call = Box::pin(client.call_tool("slow", Map::new()));
    let request = tokio::select! {
        _ = &mut call => panic!("the call ended unanswered"),
        request = server.next() => request,
    };
    drop(call);
    let cancel = within(server.next()).await;
    assert_eq!(cancel["method"], "notifications/cancelled");
    assert_eq!(cancel["params"]["requestId"], request["id"]);
    // A late answer is dropped; the connection goes on.
    server.answer_text(&request, "late").await;
    let serve = async {
        let next = server.next().await;
        server.answer_text(&next, "next").await;
    };
    assert_eq!(text(call_while(&client, serve).await), "next");
}

/// A stream with every kind of line ending, a comment, a two-line event, an event of another type, a
/// priming event with no data, and `id`/`retry` fields.
const STREAM: &[u8] = b": comment\r\nid: 1\r\nretry: 10\r\ndata:\r\n\r\ndata: {\"a\":1}\n\nevent: other\ndata: no\n\n\
event: message\rdata: {\"b\":\rdata: 2}\r\rdata: [3]\r\n\r\n";

fn events_of(parts: &[&[u8]]) -> Vec<Result<String, TooLarge>> {
    let mut events = Events::new(1 << 20);
    parts.iter().flat_map(|p| events.feed(p)).collect()
}

#[test]
fn events_are_read_whatever_the_line_endings_and_wherever_the_stream_is_cut() {
    let whole = events_of(&[STREAM]);
    assert_eq!(whole, [Ok("{\"a\":1}".to_string()), Ok("{\"b\":\n2}".to_string()), Ok("[3]".to_string())]);
    for i in 0..=STREAM.len() {
        assert_eq!(events_of(&[&STREAM[..i], &STREAM[i..]]), whole, "cut at {i}");
    }
    let bytes: Vec<&[u8]> = STREAM.chunks(1).collect();
    assert_eq!(events_of(&bytes), whole);
}

#[test]
fn an_event_too_large_is_refused_and_the_next_one_read() {
    let mut events = Events::new(16);
    let mut got = events.feed(b"data: 0123456789\ndata: 0123456789\n\n");
    got.extend(events.feed(b"data: "));
    got.extend(events.feed(&[b'x'; 40]));
    got.extend(events.feed(b"\n\ndata: ok\n\n"));
    assert_eq!(got, [Err(TooLarge), Err(TooLarge), Ok("ok".to_string())]);
}
