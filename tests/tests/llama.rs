//! The real `stepwise` binary against a real model server: llama.cpp's `llama-server` with Gemma 3 270M.
//!
//! These tests need the server and the model that `tests/llama/setup.sh` installs, so a plain `cargo test`
//! lists them as ignored; `tests/llama/test.sh` (part of `tests/run-all.sh`) installs both and runs them with
//! `--ignored`, where a missing server is a failure. The model is far too small to finish a task: the tests
//! assert on the wire (what the server said, what stepwise made of it) and on the outcome, never on the task.
//!
//! Every byte the server sends goes through a recording proxy, so stepwise's token counts can be checked
//! against the server's own.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use stepwise_tests::TempDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const TEMPLATE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/llama/gemma-tools.jinja");

fn var(name: &str) -> PathBuf {
    let v = std::env::var(name)
        .unwrap_or_else(|_| panic!("{name} is not set: run these tests through tests/llama/test.sh"));
    let p = PathBuf::from(v);
    assert!(p.exists(), "{name}={} does not exist", p.display());
    p
}

/// A running `llama-server`, killed when dropped.
struct Llama {
    child: tokio::process::Child,
    port: u16,
}

impl Drop for Llama {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

async fn start_llama(ctx: u32) -> Llama {
    // The port is picked here and handed over; llama-server cannot report one it chose itself.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let log = std::env::temp_dir().join(format!("stepwise-llama-{port}.log"));
    let child = tokio::process::Command::new(var("LLAMA_SERVER"))
        .args(["--host", "127.0.0.1", "--port", &port.to_string(), "-m"])
        .arg(var("LLAMA_MODEL"))
        .args(["--jinja", "--chat-template-file", TEMPLATE, "--temp", "0", "--seed", "1"])
        .args(["-c", &ctx.to_string(), "-np", "1", "-t", "2", "--no-webui", "--alias", "gemma"])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(&log).unwrap())
        .kill_on_drop(true)
        .spawn()
        .expect("cannot start llama-server");
    let mut llama = Llama { child, port };
    // Ready when /health answers 200 (it answers 503 while the model loads).
    let http = reqwest::Client::new();
    let url = format!("http://127.0.0.1:{port}/health");
    let ready = async {
        loop {
            if let Ok(r) = http.get(&url).send().await {
                if r.status().is_success() {
                    return;
                }
            }
            if let Ok(Some(status)) = llama.child.try_wait() {
                panic!("llama-server exited with {status}: {}", std::fs::read_to_string(&log).unwrap_or_default());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(120), ready).await.expect("llama-server did not become ready");
    llama
}

/// What the server sent on one connection.
type Seen = Arc<Mutex<Vec<u8>>>;

/// Forwards connections to the server and keeps every byte the server sent, one buffer per connection.
struct Proxy {
    port: u16,
    replies: Arc<Mutex<Vec<Seen>>>,
}

async fn start_proxy(upstream: u16) -> Proxy {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let replies: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let all = replies.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)).await else { continue };
            let seen = Arc::new(Mutex::new(Vec::new()));
            all.lock().unwrap().push(seen.clone());
            tokio::spawn(async move {
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                let up = async move {
                    let _ = tokio::io::copy(&mut cr, &mut sw).await;
                    let _ = sw.shutdown().await;
                };
                let down = async move {
                    let mut buf = vec![0u8; 16 * 1024];
                    loop {
                        match sr.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => {
                                seen.lock().unwrap().extend_from_slice(&buf[..n]);
                                if cw.write_all(&buf[..n]).await.is_err() {
                                    break;
                                }
                            }
                        }
                    }
                    let _ = cw.shutdown().await;
                };
                tokio::join!(up, down);
            });
        }
    });
    Proxy { port, replies }
}

impl Proxy {
    /// Every HTTP response the server sent, in order: (status, body).
    fn responses(&self) -> Vec<(u16, String)> {
        let conns: Vec<Vec<u8>> = self.replies.lock().unwrap().iter().map(|c| c.lock().unwrap().clone()).collect();
        conns.iter().flat_map(|bytes| parse_responses(bytes)).collect()
    }
}

/// HTTP/1.1 responses one after another on a connection, bodies by content-length or chunked.
fn parse_responses(mut bytes: &[u8]) -> Vec<(u16, String)> {
    let mut out = Vec::new();
    while let Some(end) = find(bytes, b"\r\n\r\n") {
        let head = String::from_utf8_lossy(&bytes[..end]).to_string();
        bytes = &bytes[end + 4..];
        let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        let header = |name: &str| {
            head.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_ascii_lowercase())
            })
        };
        let mut body = Vec::new();
        if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
            while let Some(line_end) = find(bytes, b"\r\n") {
                let size = usize::from_str_radix(String::from_utf8_lossy(&bytes[..line_end]).trim(), 16).unwrap_or(0);
                bytes = &bytes[line_end + 2..];
                if size == 0 {
                    bytes = bytes.get(2..).unwrap_or_default();
                    break;
                }
                let take = size.min(bytes.len());
                body.extend_from_slice(&bytes[..take]);
                bytes = bytes.get(take + 2..).unwrap_or_default();
            }
        } else {
            let len = header("content-length").and_then(|v| v.parse().ok()).unwrap_or(bytes.len()).min(bytes.len());
            body.extend_from_slice(&bytes[..len]);
            bytes = &bytes[len..];
        }
        out.push((status, String::from_utf8_lossy(&body).into_owned()));
    }
    out
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Token counts as the server reported them for one streamed answer.
#[derive(Debug, Default, PartialEq, Eq)]
struct Counted {
    prompt: u64,
    output: u64,
    cached: u64,
}

fn server_usage(body: &str) -> Counted {
    let mut c = Counted::default();
    for data in body.lines().filter_map(|l| l.strip_prefix("data:")) {
        let Ok(v) = serde_json::from_str::<Value>(data.trim()) else { continue };
        let n = |p: &str| v.pointer(p).and_then(Value::as_u64);
        // OpenAI: the final chunk carries usage; prompt_tokens already includes the cached part.
        if let Some(p) = n("/usage/prompt_tokens") {
            c.prompt = p;
            c.output = n("/usage/completion_tokens").unwrap_or(0);
            c.cached = n("/usage/prompt_tokens_details/cached_tokens").unwrap_or(0);
        }
        // Anthropic: message_start has the prompt (uncached input + cache reads), message_delta the output.
        if let Some(i) = n("/message/usage/input_tokens") {
            c.cached = n("/message/usage/cache_read_input_tokens").unwrap_or(0);
            c.prompt = i + c.cached + n("/message/usage/cache_creation_input_tokens").unwrap_or(0);
        }
        if v.get("type").and_then(Value::as_str) == Some("message_delta") {
            if let Some(o) = n("/usage/output_tokens") {
                c.output = o;
            }
        }
    }
    c
}

fn stepwise_bin() -> PathBuf {
    var("STEPWISE_BIN")
}

struct Session {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    /// stepwise's own record of every model response (`--record`).
    recorded: Vec<Value>,
}

/// `stepwise chat` with the given lines, against the proxy, in the given provider's wire format.
async fn chat(provider: &str, proxy: &Proxy, ws: &Path, lines: &str, extra: &[(&str, &str)]) -> Session {
    let record = ws.join("..").join(format!("record-{provider}.jsonl"));
    let mut cmd = tokio::process::Command::new(stepwise_bin());
    cmd.env_clear();
    for keep in ["PATH", "HOME", "TMPDIR", "LANG"] {
        if let Ok(v) = std::env::var(keep) {
            cmd.env(keep, v);
        }
    }
    // As these tests were written (a real model's commands may write anywhere in its scratch folder).
    cmd.env("STEPWISE_SANDBOX", "off");
    let base = format!("http://127.0.0.1:{}", proxy.port);
    match provider {
        "openai" => cmd
            .env("STEPWISE_PROVIDER", "openai")
            .env("OPENAI_BASE_URL", format!("{base}/v1"))
            .env("OPENAI_API_KEY", "local"),
        _ => {
            cmd.env("STEPWISE_PROVIDER", "anthropic").env("ANTHROPIC_BASE_URL", &base).env("ANTHROPIC_API_KEY", "local")
        }
    };
    cmd.env("MODEL_ID", "gemma")
        .env("STEPWISE_MAX_ROUNDS", "2")
        .env("STEPWISE_MAX_TOKENS", "48")
        .env("STEPWISE_MAX_RETRIES", "0")
        .env("STEPWISE_MODEL_TIMEOUT", "120");
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd.args(["chat", "--yes", "--workspace"])
        .arg(ws)
        .arg("--record")
        .arg(&record)
        .current_dir(ws)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().expect("cannot start stepwise");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(lines.as_bytes()).await.unwrap();
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(600), child.wait_with_output())
        .await
        .expect("stepwise chat did not finish")
        .unwrap();
    let recorded = std::fs::read_to_string(&record)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("--record wrote a line that is not JSON"))
        .collect();
    Session {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        recorded,
    }
}

fn workspace() -> (TempDir, PathBuf) {
    let tmp = TempDir::new("llama");
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("hello.py"), "print('hello')\n").unwrap();
    (tmp, ws)
}

/// No protocol error, no crash: whatever the small model says, stepwise reads the wire correctly.
fn assert_clean(s: &Session) {
    let all = format!("{}\n{}", s.stdout, s.stderr);
    for bad in ["unexpected response", "panicked", "invalid JSON", "API error"] {
        assert!(!all.contains(bad), "stepwise reported '{bad}':\n{all}");
    }
    assert!(s.code.is_some(), "stepwise was killed by a signal:\n{all}");
}

async fn usage_matches_the_server(provider: &str) {
    let llama = start_llama(4096).await;
    let proxy = start_proxy(llama.port).await;
    let (_tmp, ws) = workspace();
    // Two tasks in one conversation: the second request repeats the first one's prefix, which the server
    // has cached, so its report must show cached tokens, and stepwise must count them.
    let s = chat(provider, &proxy, &ws, "Say hello.\nSay goodbye.\n", &[]).await;
    assert_clean(&s);

    // Model answers only (the server is also asked for its context window, at /props).
    let answers: Vec<Counted> = proxy
        .responses()
        .into_iter()
        .filter(|(status, body)| *status == 200 && body.contains("data:"))
        .map(|(_, b)| server_usage(&b))
        .collect();
    assert!(answers.len() >= 2, "expected at least two answers from the server, got {answers:?}\n{}", s.stderr);
    assert_eq!(s.recorded.len(), answers.len(), "one recorded response per server answer:\n{}", s.stderr);
    for (i, (rec, srv)) in s.recorded.iter().zip(&answers).enumerate() {
        let u = |k: &str| rec.pointer(&format!("/usage/{k}")).and_then(Value::as_u64).unwrap_or(0);
        let mine = Counted { prompt: u("input_tokens"), output: u("output_tokens"), cached: u("cache_read_tokens") };
        assert_eq!(&mine, srv, "answer {i}: stepwise's usage differs from the server's");
        assert!(srv.prompt > 0 && srv.output > 0, "answer {i}: the server counted nothing: {srv:?}");
    }
    if provider == "openai" {
        // No window configured: llama-server's own (`-c 4096`, from its /props) is the one used.
        assert!(s.stderr.contains(" of 4096]"), "the server's context window:\n{}", s.stderr);
    }
    assert!(
        answers.last().is_some_and(|c| c.cached > 0),
        "the second task's prompt should be partly cached: {answers:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs llama-server and the Gemma GGUF: run tests/llama/test.sh"]
async fn openai_wire_usage_matches_llama_server() {
    usage_matches_the_server("openai").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs llama-server and the Gemma GGUF: run tests/llama/test.sh"]
async fn anthropic_wire_usage_matches_llama_server() {
    usage_matches_the_server("anthropic").await;
}

/// A context too small for even the tools and the system prompt: the server's own overflow error reaches
/// stepwise, which compacts (a summary in a request without tools) and retries once, then ends the task
/// with an error that names the window; the process survives and the next task is still sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs llama-server and the Gemma GGUF: run tests/llama/test.sh"]
async fn tiny_context_overflow_is_reported_and_survived() {
    let llama = start_llama(512).await;
    let proxy = start_proxy(llama.port).await;
    let (_tmp, ws) = workspace();
    let s = chat("openai", &proxy, &ws, "Say hello.\nSay goodbye.\n", &[("STEPWISE_CONTEXT_WINDOW", "512")]).await;
    let responses = proxy.responses();
    let overflow: Vec<&(u16, String)> = responses
        .iter()
        .filter(|(status, body)| *status == 400 && body.contains("exceed_context_size_error"))
        .collect();
    assert!(!overflow.is_empty(), "llama-server should have refused a prompt over 512 tokens: {responses:?}");
    let all = format!("{}\n{}", s.stdout, s.stderr);
    assert!(!all.contains("panicked"), "{all}");
    // The overflow went through compaction (a summary request, one retry) before the task gave up with a
    // message that names the context window.
    assert!(all.contains("[compacted the conversation"), "the overflow should be compacted:\n{all}");
    assert!(
        all.contains("does not fit the model's context window (512 tokens) even after compaction"),
        "stepwise should say the context window was the problem:\n{all}"
    );
    // Both tasks reached the server: the first failure did not end the conversation.
    let requests = responses.len();
    assert!(requests >= 2, "the second task should still be sent after the overflow: {responses:?}");
}
