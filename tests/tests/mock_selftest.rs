//! Self-tests of the mock model server, driven by a real HTTP client (reqwest) and by raw sockets.

use std::ffi::OsStr;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use stepwise_tests::mock::{HttpError, MockModel, Script, Step, Turn};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const WAIT: Duration = Duration::from_secs(5);

fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(WAIT).build().unwrap()
}

async fn anthropic(mock: &MockModel, body: Value) -> reqwest::Response {
    client()
        .post(format!("{}/v1/messages", mock.url()))
        .header("x-api-key", "test-key")
        .header("anthropic-version", "2023-06-01")
        .json(&body)
        .send()
        .await
        .unwrap()
}

async fn openai(mock: &MockModel, body: Value) -> reqwest::Response {
    client()
        .post(format!("{}/chat/completions", mock.openai_base()))
        .bearer_auth("sk-test")
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// Parses an SSE body into (event name, data) pairs.
fn sse_events(body: &str) -> Vec<(Option<String>, String)> {
    let mut out = Vec::new();
    for block in body.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let mut event = None;
        let mut data = Vec::new();
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("event: ") {
                event = Some(v.to_owned());
            } else if let Some(v) = line.strip_prefix("data: ") {
                data.push(v);
            } else {
                panic!("unexpected SSE line: {line:?}");
            }
        }
        out.push((event, data.join("\n")));
    }
    out
}

fn tool_turn() -> Turn {
    Turn::text("Let me look at the files first.").with_tool("bash", json!({"command": "ls -la"})).with_tool_id(
        "my_id",
        "write_file",
        json!({"path": "a.txt", "content": "héllo\n\"quoted\""}),
    )
}

#[tokio::test]
async fn anthropic_json() {
    let mock = MockModel::start(vec![tool_turn().with_usage(123, 45).into()]).await;
    let resp = anthropic(
        &mock,
        json!({"model": "claude-test", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("application/json"));
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["type"], "message");
    assert_eq!(body["role"], "assistant");
    assert_eq!(body["model"], "claude-test");
    assert!(body["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(body["stop_reason"], "tool_use");
    assert_eq!(body["stop_sequence"], Value::Null);
    assert_eq!(body["usage"], json!({"input_tokens": 123, "output_tokens": 45}));
    let content = body["content"].as_array().unwrap();
    assert_eq!(content.len(), 3);
    assert_eq!(content[0], json!({"type": "text", "text": "Let me look at the files first."}));
    assert_eq!(content[1]["type"], "tool_use");
    assert!(content[1]["id"].as_str().unwrap().starts_with("toolu_"));
    assert_eq!(content[1]["name"], "bash");
    assert_eq!(content[1]["input"], json!({"command": "ls -la"}));
    assert_eq!(content[2]["id"], "my_id");
    assert_eq!(content[2]["input"], json!({"path": "a.txt", "content": "héllo\n\"quoted\""}));
    assert_eq!(mock.remaining(), 0);

    // Plain text turn: end_turn and default usage.
    mock.push(Step::text("done"));
    let body: Value = anthropic(&mock, json!({"model": "m", "messages": []})).await.json().await.unwrap();
    assert_eq!(body["stop_reason"], "end_turn");
    assert_eq!(body["usage"], json!({"input_tokens": 10, "output_tokens": 5}));
    assert_eq!(body["content"], json!([{"type": "text", "text": "done"}]));
}

#[tokio::test]
async fn anthropic_sse() {
    let mock = MockModel::start(vec![tool_turn().with_usage(7, 9).into()]).await;
    let resp = anthropic(&mock, json!({"model": "claude-test", "stream": true, "messages": []})).await;
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    assert_eq!(resp.headers()["transfer-encoding"], "chunked");
    let events = sse_events(&resp.text().await.unwrap());

    let names: Vec<&str> = events.iter().map(|(e, _)| e.as_deref().unwrap()).collect();
    assert_eq!(names[..2], ["message_start", "ping"]);
    assert_eq!(names[names.len() - 2..], ["message_delta", "message_stop"]);

    let mut text = String::new();
    let mut blocks: Vec<Value> = Vec::new();
    let mut json_parts: Vec<Vec<String>> = Vec::new();
    let mut final_delta = Value::Null;
    for (name, data) in &events {
        let data: Value = serde_json::from_str(data).unwrap();
        assert_eq!(data["type"], name.as_deref().unwrap(), "data.type matches the event name");
        match name.as_deref().unwrap() {
            "message_start" => {
                assert_eq!(data["message"]["content"], json!([]));
                assert_eq!(data["message"]["model"], "claude-test");
                assert_eq!(data["message"]["usage"]["input_tokens"], 7);
            }
            "content_block_start" => {
                assert_eq!(data["index"], blocks.len());
                blocks.push(data["content_block"].clone());
                json_parts.push(Vec::new());
            }
            "content_block_delta" => {
                let i = data["index"].as_u64().unwrap() as usize;
                assert_eq!(i, blocks.len() - 1);
                match data["delta"]["type"].as_str().unwrap() {
                    "text_delta" => text.push_str(data["delta"]["text"].as_str().unwrap()),
                    "input_json_delta" => {
                        json_parts[i].push(data["delta"]["partial_json"].as_str().unwrap().to_owned())
                    }
                    other => panic!("unexpected delta {other}"),
                }
            }
            "message_delta" => final_delta = data,
            _ => {}
        }
    }
    let text_deltas = events.iter().filter(|(_, d)| d.contains("text_delta")).count();
    assert!(text_deltas >= 3, "text is split into several deltas, got {text_deltas}");
    assert_eq!(text, "Let me look at the files first.");
    assert_eq!(blocks.len(), 3);
    assert_eq!(blocks[0], json!({"type": "text", "text": ""}));
    assert_eq!(blocks[1]["type"], "tool_use");
    assert_eq!(blocks[1]["name"], "bash");
    assert_eq!(blocks[1]["input"], json!({}));
    assert!(blocks[1]["id"].as_str().unwrap().starts_with("toolu_"));
    assert_eq!(blocks[2]["id"], "my_id");
    for (i, expected) in
        [(1, json!({"command": "ls -la"})), (2, json!({"path": "a.txt", "content": "héllo\n\"quoted\""}))]
    {
        let non_empty = json_parts[i].iter().filter(|p| !p.is_empty()).count();
        assert!(non_empty >= 2, "tool input split in 2+ pieces: {:?}", json_parts[i]);
        let input: Value = serde_json::from_str(&json_parts[i].concat()).unwrap();
        assert_eq!(input, expected);
    }
    assert_eq!(
        final_delta,
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 9}})
    );
}

#[tokio::test]
async fn sse_is_streamed_incrementally() {
    let mock = MockModel::start(vec![Turn::text("one two three four").with_chunk_delay_ms(40).into()]).await;
    let start = Instant::now();
    let mut resp = anthropic(&mock, json!({"model": "m", "stream": true, "messages": []})).await;
    let mut arrivals = Vec::new();
    while let Some(chunk) = resp.chunk().await.unwrap() {
        arrivals.push((start.elapsed(), chunk));
    }
    // 10 events, 40 ms apart: at least ~360 ms in total, and the first event well before the end.
    let total = arrivals.last().unwrap().0;
    assert!(total >= Duration::from_millis(300), "total {total:?}");
    assert!(arrivals[0].0 + Duration::from_millis(200) < total, "first chunk came late: {arrivals:?}");
    assert!(arrivals.len() >= 5, "events arrive separately: {} chunks", arrivals.len());
}

#[tokio::test]
async fn openai_json() {
    let mock = MockModel::start(vec![tool_turn().with_usage(30, 4).into(), Step::text("All done.")]).await;
    let resp = openai(&mock, json!({"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]})).await;
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], "gpt-test");
    assert!(body["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert!(body["created"].as_u64().unwrap() > 1_600_000_000);
    assert_eq!(body["usage"], json!({"prompt_tokens": 30, "completion_tokens": 4, "total_tokens": 34}));
    let choice = &body["choices"][0];
    assert_eq!(choice["index"], 0);
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["role"], "assistant");
    assert_eq!(choice["message"]["content"], "Let me look at the files first.");
    let calls = choice["message"]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2);
    assert!(calls[0]["id"].as_str().unwrap().starts_with("call_"));
    assert_eq!(calls[0]["type"], "function");
    assert_eq!(calls[0]["function"]["name"], "bash");
    let args = calls[0]["function"]["arguments"].as_str().expect("arguments is a JSON string");
    assert_eq!(serde_json::from_str::<Value>(args).unwrap(), json!({"command": "ls -la"}));
    assert_eq!(calls[1]["id"], "my_id");

    let body: Value = openai(&mock, json!({"model": "gpt-test", "messages": []})).await.json().await.unwrap();
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
    assert_eq!(body["choices"][0]["message"]["content"], "All done.");
    assert!(body["choices"][0]["message"].get("tool_calls").is_none(), "no tool_calls key without calls");

    // Both paths are accepted.
    let paths: Vec<String> = mock.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(paths, ["/v1/chat/completions", "/v1/chat/completions"]);
}

fn reassemble_openai(events: &[(Option<String>, String)]) -> (String, Vec<(String, String, String)>, Vec<Value>) {
    let mut text = String::new();
    let mut calls: Vec<(String, String, String)> = Vec::new();
    let mut chunks = Vec::new();
    let mut arg_pieces = 0;
    for (name, data) in events {
        assert!(name.is_none(), "OpenAI chunks have no event name");
        if data == "[DONE]" {
            continue;
        }
        let chunk: Value = serde_json::from_str(data).unwrap();
        assert_eq!(chunk["object"], "chat.completion.chunk");
        if let Some(delta) = chunk["choices"].get(0).map(|c| &c["delta"]) {
            if let Some(t) = delta["content"].as_str() {
                text.push_str(t);
            }
            for tc in delta["tool_calls"].as_array().into_iter().flatten() {
                let i = tc["index"].as_u64().unwrap() as usize;
                if i == calls.len() {
                    calls.push(Default::default());
                }
                if let Some(id) = tc["id"].as_str() {
                    calls[i].0 = id.to_owned();
                }
                if let Some(n) = tc["function"]["name"].as_str() {
                    calls[i].1.push_str(n);
                }
                if let Some(a) = tc["function"]["arguments"].as_str() {
                    if !a.is_empty() {
                        arg_pieces += 1;
                    }
                    calls[i].2.push_str(a);
                }
            }
        }
        chunks.push(chunk);
    }
    assert!(calls.is_empty() || arg_pieces >= 2 * calls.len(), "arguments split over several chunks");
    (text, calls, chunks)
}

#[tokio::test]
async fn openai_sse() {
    let mock = MockModel::start(vec![tool_turn().with_usage(11, 22).into(), Step::text("just text here")]).await;

    // With include_usage.
    let resp = openai(
        &mock,
        json!({"model": "gpt-test", "stream": true, "stream_options": {"include_usage": true}, "messages": []}),
    )
    .await;
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    let events = sse_events(&resp.text().await.unwrap());
    assert_eq!(events.last().unwrap().1, "[DONE]");
    let (text, calls, chunks) = reassemble_openai(&events);
    assert_eq!(text, "Let me look at the files first.");
    assert_eq!(calls.len(), 2);
    assert!(calls[0].0.starts_with("call_"));
    assert_eq!(calls[0].1, "bash");
    assert_eq!(serde_json::from_str::<Value>(&calls[0].2).unwrap(), json!({"command": "ls -la"}));
    assert_eq!(calls[1].0, "my_id");
    assert_eq!(calls[1].1, "write_file");
    assert_eq!(
        serde_json::from_str::<Value>(&calls[1].2).unwrap(),
        json!({"path": "a.txt", "content": "héllo\n\"quoted\""})
    );
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let usage_chunk = chunks.last().unwrap();
    assert_eq!(usage_chunk["choices"], json!([]));
    assert_eq!(usage_chunk["usage"], json!({"prompt_tokens": 11, "completion_tokens": 22, "total_tokens": 33}));
    let finish = &chunks[chunks.len() - 2];
    assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
    assert!(chunks[..chunks.len() - 2].iter().all(|c| c["choices"][0]["finish_reason"].is_null()));

    // Without include_usage: no usage chunk; finish chunk is last before [DONE].
    let resp = openai(&mock, json!({"model": "gpt-test", "stream": true, "messages": []})).await;
    let events = sse_events(&resp.text().await.unwrap());
    let (text, calls, chunks) = reassemble_openai(&events);
    assert_eq!(text, "just text here");
    assert!(calls.is_empty());
    assert!(chunks.len() >= 4, "role, 3 text pieces, finish");
    assert_eq!(chunks.last().unwrap()["choices"][0]["finish_reason"], "stop");
    assert!(chunks.iter().all(|c| c.get("usage").is_none()));
}

#[tokio::test]
async fn stop_reason_is_mapped_between_providers() {
    let mock = MockModel::start(vec![
        Turn::text("x").with_stop_reason("max_tokens").into(),
        Turn::text("x").with_stop_reason("max_tokens").into(),
    ])
    .await;
    let a: Value = anthropic(&mock, json!({"model": "m", "messages": []})).await.json().await.unwrap();
    assert_eq!(a["stop_reason"], "max_tokens");
    let o: Value = openai(&mock, json!({"model": "m", "messages": []})).await.json().await.unwrap();
    assert_eq!(o["choices"][0]["finish_reason"], "length");
}

#[tokio::test]
async fn http_errors() {
    let mock = MockModel::start(vec![
        HttpError::new(429).header("retry-after", "0").into(),
        Step::http_error(529),
        HttpError::new(400).body(json!({"custom": true})).into(),
        Step::http_error(429),
        Step::text("after the errors"),
    ])
    .await;
    let resp = anthropic(&mock, json!({"model": "m", "messages": []})).await;
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"], "0");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "rate_limit_error");
    assert!(body["error"]["message"].is_string());

    let resp = anthropic(&mock, json!({"model": "m", "stream": true, "messages": []})).await;
    assert_eq!(resp.status(), 529);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["type"], "overloaded_error");

    let resp = openai(&mock, json!({"model": "m", "messages": []})).await;
    assert_eq!(resp.status(), 400);
    assert_eq!(resp.json::<Value>().await.unwrap(), json!({"custom": true}));

    let resp = openai(&mock, json!({"model": "m", "messages": []})).await;
    assert_eq!(resp.status(), 429);
    let body: Value = resp.json().await.unwrap();
    assert!(body["error"]["message"].is_string());
    assert!(body["error"]["type"].is_string());
    assert!(body["error"].get("code").is_some_and(Value::is_null));

    let resp = anthropic(&mock, json!({"model": "m", "messages": []})).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(mock.requests().len(), 5);
}

#[tokio::test]
async fn keep_alive_with_reqwest() {
    let mock = MockModel::start(vec![Step::text("a"), Step::text("b"), Turn::text("c").into()]).await;
    let client = client();
    for (i, expected) in ["a", "b", "c"].iter().enumerate() {
        let resp = client
            .post(format!("{}/v1/messages", mock.url()))
            .json(&json!({"model": "m", "stream": i == 1, "messages": []}))
            .send()
            .await
            .unwrap();
        let text = resp.text().await.unwrap();
        assert!(text.contains(&format!("\"{expected}\"")), "{text}");
    }
    assert_eq!(mock.connections(), 1, "reqwest reused one connection for JSON and SSE answers");
}

/// Reads one HTTP/1.1 response with a Content-Length body from a raw socket.
async fn read_response(stream: &mut TcpStream, buf: &mut Vec<u8>) -> (String, Value) {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8(buf[..end].to_vec()).unwrap();
            let len: usize = head
                .lines()
                .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap()))
                .expect("content-length");
            if buf.len() >= end + 4 + len {
                let body = serde_json::from_slice(&buf[end + 4..end + 4 + len]).unwrap();
                buf.drain(..end + 4 + len);
                return (head, body);
            }
        }
        let mut tmp = [0u8; 4096];
        let n = tokio::time::timeout(WAIT, stream.read(&mut tmp)).await.unwrap().unwrap();
        assert!(n > 0, "server closed the connection");
        buf.extend_from_slice(&tmp[..n]);
    }
}

#[tokio::test]
async fn keep_alive_raw_and_chunked_request_body() {
    let mock = MockModel::start(vec![Step::text("first"), Step::text("second"), Step::text("third")]).await;
    let mut s = TcpStream::connect(mock.addr()).await.unwrap();
    let mut buf = Vec::new();

    let body = r#"{"model":"m","messages":[]}"#;
    let req = format!(
        "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Api-Key: k1\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let (head, resp) = read_response(&mut s, &mut buf).await;
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert_eq!(resp["content"][0]["text"], "first");

    // Second request on the same connection, body sent chunked, in two chunks.
    let (a, b) = body.split_at(10);
    let req = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
        a.len(),
        b.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let (_, resp) = read_response(&mut s, &mut buf).await;
    assert_eq!(resp["choices"][0]["message"]["content"], "second");

    // Third, pipelined with a 404 in one write.
    let req = format!(
        "GET /nope HTTP/1.1\r\nHost: x\r\n\r\nPOST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let (head, _) = read_response(&mut s, &mut buf).await;
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    let (_, resp) = read_response(&mut s, &mut buf).await;
    assert_eq!(resp["content"][0]["text"], "third");

    assert_eq!(mock.connections(), 1);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 4);
    assert_eq!(reqs[0].header("x-api-key"), Some("k1"));
    assert_eq!(reqs[1].body, json!({"model": "m", "messages": []}));
    assert_eq!(reqs[2].method, "GET");
    assert_eq!(reqs[2].path, "/nope");
}

#[tokio::test]
async fn exhausted_script_answers_500() {
    let mock = MockModel::start(Script::default()).await;
    let resp = anthropic(&mock, json!({"model": "m", "messages": []})).await;
    assert_eq!(resp.status(), 500);
    let body: Value = resp.json().await.unwrap();
    assert!(body["error"]["message"].as_str().unwrap().contains("mock script exhausted"), "{body}");
    let resp = openai(&mock, json!({"model": "m", "messages": []})).await;
    assert_eq!(resp.status(), 500);
    let body: Value = resp.json().await.unwrap();
    assert!(body["error"]["message"].as_str().unwrap().contains("mock script exhausted"), "{body}");
    assert_eq!(mock.requests().len(), 2, "exhausted requests are recorded");
}

#[tokio::test]
async fn records_body_and_headers() {
    let mock = MockModel::start(vec![Step::text("ok"), Step::text("ok")]).await;
    let sent = json!({"model": "claude-x", "max_tokens": 64, "system": "be brief",
                      "messages": [{"role": "user", "content": [{"type": "text", "text": "héllo"}]}],
                      "tools": [{"name": "bash", "input_schema": {"type": "object"}}]});
    anthropic(&mock, sent.clone()).await.text().await.unwrap();
    openai(&mock, json!({"model": "gpt"})).await.text().await.unwrap();
    let reqs = mock.wait_for_requests(2, WAIT).await;
    assert_eq!(reqs[0].method, "POST");
    assert_eq!(reqs[0].path, "/v1/messages");
    assert_eq!(reqs[0].body, sent);
    assert_eq!(reqs[0].header("x-api-key"), Some("test-key"));
    assert_eq!(reqs[0].header("Anthropic-Version"), Some("2023-06-01"));
    assert_eq!(reqs[0].header("content-type"), Some("application/json"));
    assert!(reqs[0].headers.iter().all(|(k, _)| *k == k.to_ascii_lowercase()), "header names are lowercase");
    assert_eq!(reqs[1].header("authorization"), Some("Bearer sk-test"));
    assert_eq!(reqs[1].body, json!({"model": "gpt"}));
}

#[tokio::test]
async fn unknown_path_and_bad_body() {
    let mock = MockModel::start(vec![Step::text("kept")]).await;
    let resp = client().get(format!("{}/v1/models", mock.url())).send().await.unwrap();
    assert_eq!(resp.status(), 404);
    assert!(resp.json::<Value>().await.unwrap()["error"]["message"].is_string());
    let resp = client().post(format!("{}/v1/messages", mock.url())).body("not json").send().await.unwrap();
    assert_eq!(resp.status(), 400);
    assert_eq!(mock.remaining(), 1, "neither consumed a step");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[1].body, Value::Null);
}

#[tokio::test]
async fn hang_records_and_never_answers() {
    let mock = MockModel::start(vec![Step::Hang, Step::text("after hang")]).await;
    let short = reqwest::Client::builder().timeout(Duration::from_millis(300)).build().unwrap();
    let start = Instant::now();
    let err = short
        .post(format!("{}/v1/messages", mock.url()))
        .json(&json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "wait"}]}))
        .send()
        .await
        .expect_err("no answer");
    assert!(err.is_timeout(), "{err}");
    assert!(start.elapsed() >= Duration::from_millis(300));
    let reqs = mock.wait_for_requests(1, WAIT).await;
    assert_eq!(reqs[0].body["messages"][0]["content"], "wait");
    // The server keeps serving other connections.
    let resp = anthropic(&mock, json!({"model": "m", "messages": []})).await;
    assert_eq!(resp.json::<Value>().await.unwrap()["content"][0]["text"], "after hang");
}

#[tokio::test]
async fn stream_error_cuts_the_stream() {
    let mock = MockModel::start(vec![Step::stream_error(Some("partial answer")), Step::stream_error(None)]).await;
    let mut resp = anthropic(&mock, json!({"model": "m", "stream": true, "messages": []})).await;
    assert_eq!(resp.status(), 200);
    let mut got = Vec::new();
    let err = loop {
        match resp.chunk().await {
            Ok(Some(c)) => got.extend_from_slice(&c),
            Ok(None) => panic!("stream ended cleanly: {}", String::from_utf8_lossy(&got)),
            Err(e) => break e,
        }
    };
    assert!(err.is_body() || err.is_decode(), "{err:?}");
    let got = String::from_utf8(got).unwrap();
    assert!(got.contains("message_start") && got.contains("partial ") && !got.contains("message_stop"), "{got}");

    let resp = openai(&mock, json!({"model": "m", "stream": true, "messages": []})).await;
    assert_eq!(resp.status(), 200);
    assert!(resp.text().await.is_err(), "the OpenAI stream is cut too");
}

#[tokio::test]
async fn delay_push_remaining() {
    let mock = MockModel::start(vec![Turn::text("slow").with_delay_ms(150).into()]).await;
    assert_eq!(mock.remaining(), 1);
    let start = Instant::now();
    let resp = openai(&mock, json!({"model": "m", "messages": []})).await;
    assert!(start.elapsed() >= Duration::from_millis(150));
    assert_eq!(resp.status(), 200);
    assert_eq!(mock.remaining(), 0);
    mock.push(Step::text("pushed"));
    assert_eq!(mock.remaining(), 1);
    let body: Value = openai(&mock, json!({"model": "m", "messages": []})).await.json().await.unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], "pushed");
}

#[tokio::test]
async fn tool_ids_are_unique_per_server() {
    let mock = MockModel::start(vec![
        Step::tool("bash", json!({"command": "a"})),
        Step::tool("bash", json!({"command": "b"})),
    ])
    .await;
    let a: Value = anthropic(&mock, json!({"model": "m", "messages": []})).await.json().await.unwrap();
    let b: Value = anthropic(&mock, json!({"model": "m", "messages": []})).await.json().await.unwrap();
    assert_eq!(a["content"].as_array().unwrap().len(), 1, "no text block without text");
    assert_ne!(a["content"][0]["id"], b["content"][0]["id"]);
}

#[tokio::test]
#[should_panic(expected = "timed out")]
async fn wait_for_requests_panics_on_timeout() {
    let mock = MockModel::start(Script::default()).await;
    mock.wait_for_requests(1, Duration::from_millis(50)).await;
}

#[tokio::test]
async fn drop_stops_the_server() {
    let mock = MockModel::start(vec![Step::Hang]).await;
    let addr = mock.addr();
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}").await.unwrap();
    mock.wait_for_requests(1, WAIT).await;
    drop(mock);
    // The hanging connection is closed...
    let mut tmp = [0u8; 64];
    let n = tokio::time::timeout(WAIT, s.read(&mut tmp)).await.expect("closed on drop").unwrap_or(0);
    assert_eq!(n, 0);
    // ...and the port soon no longer accepts connections (the listener closes on its own task).
    let deadline = std::time::Instant::now() + WAIT;
    while TcpStream::connect(addr).await.is_ok() {
        assert!(std::time::Instant::now() < deadline, "the port still accepts connections");
        tokio::task::yield_now().await;
    }
}

/// Starts the `mock-model` binary with `args` (stdin piped: closing it ends the process) and reads the URL it
/// says it listens on.
async fn start_binary(args: &[&OsStr]) -> (tokio::process::Child, String) {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mock-model"))
        .args(args)
        .arg("--exit-on-stdin-eof")
        .arg("--quiet")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(WAIT, lines.next_line()).await.unwrap().unwrap().unwrap();
    let url = line.strip_prefix("listening ").expect(&line).to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    (child, url)
}

#[tokio::test]
async fn binary_serves_and_records() {
    let dir = std::env::temp_dir().join(format!("mock-model-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script_path = dir.join("script.json");
    let record_path = dir.join("requests.jsonl");
    let _ = std::fs::remove_file(&record_path);
    std::fs::write(
        &script_path,
        r#"{"steps": [{"type": "turn", "text": "from the binary"},
                      {"type": "http_error", "status": 429, "headers": {"retry-after": 0}}]}"#,
    )
    .unwrap();
    let (mut child, url) = start_binary(&[
        OsStr::new("--script"),
        script_path.as_os_str(),
        OsStr::new("--record"),
        record_path.as_os_str(),
    ])
    .await;

    let resp = client()
        .post(format!("{url}/v1/messages"))
        .header("x-api-key", "bin-key")
        .json(&json!({"model": "m", "messages": []}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.json::<Value>().await.unwrap()["content"][0]["text"], "from the binary");
    let resp = client().post(format!("{url}/v1/chat/completions")).json(&json!({"model": "m"})).send().await.unwrap();
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"], "0");

    let recorded = std::fs::read_to_string(&record_path).unwrap();
    let recorded: Vec<Value> = recorded.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(recorded.len(), 2);
    assert_eq!(recorded[0]["method"], "POST");
    assert_eq!(recorded[0]["path"], "/v1/messages");
    assert_eq!(recorded[0]["headers"]["x-api-key"], "bin-key");
    assert_eq!(recorded[0]["body"], json!({"model": "m", "messages": []}));
    assert_eq!(recorded[1]["path"], "/v1/chat/completions");

    // Closing stdin ends the process cleanly.
    drop(child.stdin.take());
    let status = tokio::time::timeout(WAIT, child.wait()).await.unwrap().unwrap();
    assert!(status.success(), "{status}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--routes`: each conversation whose first user message holds a route's key is answered from that route's
/// steps, whatever order the conversations ask in; the others from `--script`. A route with an empty key
/// (it would take every conversation) is refused at start.
#[tokio::test]
async fn binary_routes_conversations_by_their_first_message() {
    let dir = std::env::temp_dir().join(format!("mock-model-routes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (script_path, routes_path) = (dir.join("script.json"), dir.join("routes.json"));
    std::fs::write(&script_path, r#"[{"type": "turn", "text": "from the script"}]"#).unwrap();
    std::fs::write(
        &routes_path,
        r#"[{"key": "alpha", "steps": [{"type": "turn", "text": "alpha 1"}, {"type": "turn", "text": "alpha 2"}]},
            {"key": "beta", "steps": {"steps": [{"type": "turn", "text": "beta 1"}]}}]"#,
    )
    .unwrap();
    let (mut child, url) = start_binary(&[
        OsStr::new("--script"),
        script_path.as_os_str(),
        OsStr::new("--routes"),
        routes_path.as_os_str(),
    ])
    .await;
    let ask = |first: &'static str| {
        let url = url.clone();
        async move {
            let body = json!({"model": "m", "messages": [{"role": "user", "content": first}]});
            let resp = client().post(format!("{url}/v1/messages")).json(&body).send().await.unwrap();
            resp.json::<Value>().await.unwrap()["content"][0]["text"].as_str().unwrap_or_default().to_owned()
        }
    };
    assert_eq!(ask("the alpha task").await, "alpha 1");
    assert_eq!(ask("the beta task").await, "beta 1");
    assert_eq!(ask("something else").await, "from the script");
    assert_eq!(ask("alpha again").await, "alpha 2");
    drop(child.stdin.take());
    assert!(tokio::time::timeout(WAIT, child.wait()).await.unwrap().unwrap().success());

    std::fs::write(&routes_path, r#"[{"key": "", "steps": []}]"#).unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_mock-model"))
        .arg("--script")
        .arg(&script_path)
        .arg("--routes")
        .arg(&routes_path)
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("a route's key is empty"), "{out:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
