//! Each sandboxed session has its own network (issue 47, item 4): two sessions of one folder each start a
//! server on the same port, and each session's commands reach its own; the host's server on that port is
//! reached by neither.

use std::io::{Read, Write};
use std::time::Duration;

use serde_json::json;
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::{MockModel, Step};

const T: Duration = Duration::from_secs(30);

/// Serves its name on the port; says `<name>.ready` once it listens, `<name>.failed` (the error) if it
/// cannot, so the command that fetches waits for an event, not a time.
const SERVE: &str = r#"import http.server, sys
name, port = sys.argv[1], int(sys.argv[2])
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = name.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
try:
    server = http.server.HTTPServer(("127.0.0.1", port), Handler)
except OSError as e:
    open(name + ".failed", "w").write(str(e))
    sys.exit(1)
open(name + ".ready", "w").close()
server.serve_forever()
"#;

const FETCH: &str = r#"import sys, urllib.request
print("got " + urllib.request.urlopen("http://127.0.0.1:%s/" % sys.argv[1], timeout=10).read().decode())
"#;

fn serve(name: &str, port: u16) -> Step {
    Step::tool("background_run", json!({"command": format!("python3 serve.py {name} {port}")}))
}

/// Waits until the session's server listens (or says why it cannot), then fetches from the port.
fn fetch_when_ready(name: &str, port: u16) -> Step {
    let command = format!(
        "while [ ! -e {name}.ready ] && [ ! -e {name}.failed ]; do sleep 0.02; done; \
         if [ -e {name}.failed ]; then echo \"{name} could not listen: $(cat {name}.failed)\"; exit 1; fi; \
         python3 fetch.py {port}"
    );
    Step::tool("bash", json!({"command": command}))
}

fn fetch(port: u16) -> Step {
    Step::tool("bash", json!({"command": format!("python3 fetch.py {port}")}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sandboxed_sessions_each_serve_on_the_same_port_and_reach_their_own() {
    if let Err(why) = stepwise::sandbox::netns_availability() {
        eprintln!("CANNOT TRY: no private network namespace can be made here ({why})");
        return;
    }
    eprintln!("trying: {}", stepwise::sandbox::network_isolation());
    // The host's own server on the port both sessions will use: neither session may reach it.
    let host = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    host.set_nonblocking(true).unwrap();
    let port = host.local_addr().unwrap().port();

    let (dir, state) = folder_and_state("sessions-net");
    dir.write("serve.py", SERVE);
    dir.write("fetch.py", FETCH);
    let mock = MockModel::start(vec![]).await;
    mock.route(
        "serve alpha",
        vec![
            serve("alpha", port),
            fetch_when_ready("alpha", port),
            Step::text("alpha serves"),
            // The session's second run, after the other session's server started on the same port.
            fetch(port),
            Step::text("still alpha"),
        ],
    );
    mock.route("serve beta", vec![serve("beta", port), fetch_when_ready("beta", port), Step::text("beta serves")]);
    let ed = auto_editor(ClientPreset::Bare, &dir, &state, &mock)
        .option("sandbox", json!("workspace-write"))
        .option("sandboxNetwork", json!("off"))
        .ignore(&["stepwise/review", "stepwise/checkpoint", "stepwise/sessions"])
        .start()
        .await;
    let ws = ed.folder_uri(0);
    let outputs = |log: &RunLog| -> Vec<(String, bool)> {
        log.results().into_iter().filter(|(name, _, _)| name == "bash").map(|(_, out, err)| (out, err)).collect()
    };

    let run = ed.start_run(&ws, "serve alpha").await;
    let log = ed.await_run(&ws, &run, T).await;
    assert_eq!(log.reason(), "end_turn");
    assert_eq!(outputs(&log), [("got alpha".to_string(), false)], "{:?}", log.results());

    // The second session's server listens on the same port while the first one's still runs.
    let side = ed.execute("stepwise.newSession", json!({"workspace": ws, "title": "Beta"})).await.unwrap();
    let side = side["session"].as_str().unwrap().to_string();
    let run = ed.start_run_in(&ws, &side, "serve beta").await;
    let log = ed.await_run(&ws, &run, T).await;
    assert_eq!(log.reason(), "end_turn");
    assert_eq!(outputs(&log), [("got beta".to_string(), false)], "{:?}", log.results());

    // The first session still reaches its own.
    let run = ed.start_run(&ws, "fetch again").await;
    let log = ed.await_run(&ws, &run, T).await;
    assert_eq!(outputs(&log), [("got alpha".to_string(), false)], "{:?}", log.results());

    // Both servers still run, each in its session; the host's listener was reached by neither, and the
    // host does not reach them (its own port answers nothing of theirs).
    ed.ignore(&["stepwise/background"]);
    let updates = ed.drain("stepwise/background");
    for (session, name) in [("main", "alpha"), (side.as_str(), "beta")] {
        let last = updates.iter().rev().find(|u| u["session"] == session).unwrap_or_else(|| panic!("{updates:?}"));
        let serving = format!("serve.py {name}");
        let running = last["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["running"] == true && t["command"].as_str().is_some_and(|c| c.contains(&serving)));
        assert!(running, "{session}: {last}");
    }
    match host.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("a session reached the host's port: {other:?}"),
    }
    let mut from_host = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    from_host.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    let (mut accepted, _) = loop {
        match host.accept() {
            Ok(a) => break a,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::yield_now(),
            Err(e) => panic!("{e}"),
        }
    };
    accepted.set_nonblocking(false).unwrap();
    let mut asked = [0u8; 18];
    accepted.read_exact(&mut asked).unwrap();
    assert_eq!(&asked, b"GET / HTTP/1.0\r\n\r\n", "the host's connection came to the host's own listener");
    ed.finish().await;
}
