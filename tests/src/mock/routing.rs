//! Connections and routing: which provider a path speaks, and the answer to each request.

use std::io::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::http::*;
use super::script::*;
use super::server::*;
use super::wire::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Provider {
    Anthropic,
    OpenAi,
}

pub(crate) enum After {
    /// Keep serving this connection (if the client wants keep-alive).
    Continue,
    /// Close the connection now.
    Close,
    /// Never answer: wait for the client to go away.
    Hang,
}

pub(crate) async fn handle_conn(mut stream: TcpStream, shared: Arc<Shared>) {
    let mut buf = Vec::new();
    // The previous request, parsed: dropped once the next one has arrived, so that freeing it (which takes
    // longer the longer the conversation) falls outside the timed gap between an answer and the next request.
    let mut spent: Option<Value> = None;
    loop {
        // When the next request began to arrive (its first bytes), apart from when it was whole: the
        // difference is the time its bytes took through the socket (`mock-model --timing`).
        // (`peek` waits for a byte that is there; `readable` may answer from readiness seen before.)
        if buf.is_empty() && stream.peek(&mut [0u8; 1]).await.is_err() {
            return;
        }
        let first = Instant::now();
        let req = match read_request(&mut stream, &mut buf).await {
            Ok(Some(req)) => req,
            Ok(None) => return,
            Err(e) => {
                if e.kind() == std::io::ErrorKind::InvalidData {
                    let body =
                        json!({"error": {"message": format!("mock model: {e}"), "type": "invalid_request_error"}});
                    let _ = write_json(&mut stream, 400, &[("connection".into(), "close".into())], &body).await;
                }
                return;
            }
        };
        let keep_alive = req.keep_alive();
        let received = Instant::now();
        drop(spent.take());
        let mut answered = None;
        let result = respond(&mut stream, &shared, req, &mut answered, &mut spent).await;
        if let Some((start, file)) = &shared.timing {
            let us = |t: Instant| t.duration_since(*start).as_secs_f64() * 1e6;
            let line =
                format!("{:.1} {:.1} {:.1}\n", us(received), us(answered.unwrap_or_else(Instant::now)), us(first));
            let _ = file.lock().unwrap().write_all(line.as_bytes());
        }
        match result {
            Ok(After::Continue) if keep_alive => {}
            Ok(After::Hang) => {
                // Keep the socket open, discarding input, until the client closes it
                // (or the server is dropped, which aborts this task).
                let mut tmp = [0u8; 4096];
                while let Ok(n) = stream.read(&mut tmp).await {
                    if n == 0 {
                        break;
                    }
                }
                return;
            }
            _ => {
                let _ = stream.shutdown().await;
                return;
            }
        }
    }
}

pub(crate) fn route(target: &str) -> Option<Provider> {
    let mut path = target;
    if let Some(rest) = path.strip_prefix("http://") {
        path = rest.find('/').map_or("/", |i| &rest[i..]);
    }
    let path = path.split(['?', '#']).next().unwrap_or("");
    let path = if path.len() > 1 { path.trim_end_matches('/') } else { path };
    match path {
        "/v1/messages" => Some(Provider::Anthropic),
        "/v1/chat/completions" | "/chat/completions" => Some(Provider::OpenAi),
        _ => None,
    }
}

pub(crate) fn error_body(provider: Provider, status: u16, message: &str) -> Value {
    match provider {
        Provider::Anthropic => {
            let kind = match status {
                400 => "invalid_request_error",
                401 => "authentication_error",
                403 => "permission_error",
                404 => "not_found_error",
                413 => "request_too_large",
                429 => "rate_limit_error",
                529 => "overloaded_error",
                _ => "api_error",
            };
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
        Provider::OpenAi => {
            let kind = match status {
                400 | 404 | 405 | 413 | 422 => "invalid_request_error",
                401 => "authentication_error",
                403 => "permission_error",
                429 => "rate_limit_exceeded",
                _ => "server_error",
            };
            json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
        }
    }
}

/// `answered`: when a turn's answer was written whole; `spent`: the parsed request, for the caller to drop.
pub(crate) async fn respond(
    stream: &mut TcpStream,
    shared: &Shared,
    req: Request,
    answered: &mut Option<Instant>,
    spent: &mut Option<Value>,
) -> std::io::Result<After> {
    let body_json: Option<Value> = if req.body.is_empty() { None } else { serde_json::from_slice(&req.body).ok() };
    let rec = Recorded {
        method: req.method.clone(),
        path: req.target.clone(),
        headers: req.headers.clone(),
        body: body_json.clone().unwrap_or(Value::Null),
    };
    let takes_step =
        route(&req.target).is_some() && req.method == "POST" && matches!(body_json, Some(Value::Object(_)));
    let (n, step) = shared.record(rec, takes_step);

    let Some(provider) = route(&req.target) else {
        if shared.log {
            eprintln!("mock-model: #{n} {} {} -> 404", req.method, req.target);
        }
        let body = json!({"error": {"message": format!("mock model: no route for {} {}", req.method, req.target), "type": "not_found"}});
        write_json(stream, 404, &[], &body).await?;
        return Ok(After::Continue);
    };
    if req.method != "POST" {
        let body = error_body(provider, 405, &format!("mock model: method {} not allowed", req.method));
        write_json(stream, 405, &[("allow".into(), "POST".into())], &body).await?;
        return Ok(After::Continue);
    }
    let request = match body_json {
        Some(v @ Value::Object(_)) => v,
        _ => {
            let body = error_body(provider, 400, "mock model: request body is not a JSON object");
            write_json(stream, 400, &[], &body).await?;
            return Ok(After::Continue);
        }
    };

    if shared.log {
        let what = match &step {
            None => "exhausted",
            Some(Step::Turn(_)) => "turn",
            Some(Step::HttpError(_)) => "http_error",
            Some(Step::Hang) => "hang",
            Some(Step::StreamError(_)) => "stream_error",
            Some(Step::Raw(_)) => "raw",
        };
        eprintln!("mock-model: #{n} {} {} -> {what}", req.method, req.target);
    }
    let stream_mode = request.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let ctx = Ctx {
        provider,
        model: request.get("model").and_then(Value::as_str).unwrap_or("mock-model").to_owned(),
        stream: stream_mode,
        include_usage: request.pointer("/stream_options/include_usage").and_then(Value::as_bool).unwrap_or(false),
        id: shared.next_id(),
        created: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()),
    };

    match step {
        None => {
            let message =
                format!("mock script exhausted: no step left for request #{n} ({} {})", req.method, req.target);
            write_json(stream, 500, &[], &error_body(provider, 500, &message)).await?;
            Ok(After::Continue)
        }
        Some(Step::Hang) => Ok(After::Hang),
        Some(Step::Raw(raw)) => {
            let head = format!(
                "HTTP/1.1 {} {}\r\ncontent-type: {}\r\ncontent-length: {}\r\n\r\n",
                raw.status,
                reason(raw.status),
                raw.content_type,
                raw.body.len()
            );
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(raw.body.as_bytes()).await?;
            stream.flush().await?;
            Ok(After::Continue)
        }
        Some(Step::HttpError(e)) => {
            if e.delay_ms > 0 {
                tokio::time::sleep(Duration::from_millis(e.delay_ms)).await;
            }
            let body = e.body.clone().unwrap_or_else(|| {
                error_body(provider, e.status, &format!("mock http_error {} {}", e.status, reason(e.status)))
            });
            let headers: Vec<(String, String)> = e.headers.into_iter().collect();
            write_json(stream, e.status, &headers, &body).await?;
            Ok(After::Continue)
        }
        Some(Step::Turn(mut turn)) => {
            if let (None, Some(cache)) = (turn.usage, &shared.cache) {
                let out = turn.text.as_deref().map_or(0, str::len)
                    + turn.tool_calls.iter().map(|c| c.input.to_string().len()).sum::<usize>();
                let mut cache = cache.lock().unwrap();
                let openai = provider == Provider::OpenAi;
                turn.usage = Some(crate::mock_cache::simulated(&mut cache, openai, &request, out));
            }
            if turn.delay_ms > 0 {
                tokio::time::sleep(Duration::from_millis(turn.delay_ms)).await;
            }
            let calls = assign_ids(&turn, provider, shared);
            match (provider, ctx.stream) {
                (Provider::Anthropic, false) => {
                    write_json(stream, 200, &ctx.headers(), &anthropic_message(&turn, &calls, &ctx)).await?
                }
                (Provider::OpenAi, false) => {
                    write_json(stream, 200, &ctx.headers(), &openai_completion(&turn, &calls, &ctx)).await?
                }
                (Provider::Anthropic, true) => {
                    let mut sse =
                        Sse::start(stream, Duration::from_millis(turn.chunk_delay_ms), &ctx.headers()).await?;
                    for (name, data) in anthropic_events(&turn, &calls, &ctx) {
                        sse.event(name, &data).await?;
                    }
                    sse.finish().await?;
                }
                (Provider::OpenAi, true) => {
                    let mut sse =
                        Sse::start(stream, Duration::from_millis(turn.chunk_delay_ms), &ctx.headers()).await?;
                    for chunk in openai_chunks(&turn, &calls, &ctx) {
                        sse.data(&chunk.to_string()).await?;
                    }
                    sse.data("[DONE]").await?;
                    sse.finish().await?;
                }
            }
            *answered = Some(Instant::now());
            *spent = Some(request);
            Ok(After::Continue)
        }
        Some(Step::StreamError(se)) => {
            let turn = Turn { text: se.text.clone(), ..Turn::default() };
            if ctx.stream {
                let mut sse = Sse::start(stream, Duration::ZERO, &ctx.headers()).await?;
                match provider {
                    Provider::Anthropic => {
                        // message_start, ping, and the text block without its stop.
                        let events = anthropic_events(&turn, &[], &ctx);
                        let keep = if se.text.is_some() { events.len() - 3 } else { 2 };
                        for (name, data) in events.into_iter().take(keep) {
                            sse.event(name, &data).await?;
                        }
                    }
                    Provider::OpenAi => {
                        let chunks = openai_chunks(&turn, &[], &ctx);
                        let keep = chunks.len().saturating_sub(1 + usize::from(ctx.include_usage));
                        for chunk in chunks.into_iter().take(keep.max(1)) {
                            sse.data(&chunk.to_string()).await?;
                        }
                    }
                }
            } else {
                // Promise a longer body than we send.
                let partial = match provider {
                    Provider::Anthropic => {
                        r#"{"id":"msg_cut","type":"message","role":"assistant","content":[{"type":"text","text":""#
                    }
                    Provider::OpenAi => {
                        r#"{"id":"chatcmpl-cut","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":""#
                    }
                };
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                    partial.len() + 4096
                );
                stream.write_all(head.as_bytes()).await?;
                stream.write_all(partial.as_bytes()).await?;
                stream.flush().await?;
            }
            Ok(After::Close)
        }
    }
}
