//! MCP servers nobody here wrote, for the tests: the official Python SDK's FastMCP and the reference
//! server `@modelcontextprotocol/server-everything`, installed by tests/mcp/setup.sh (cached in
//! ~/.cache/stepwise-tools/mcp). A failed install fails the test that needs them.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;

use serde_json::{json, Value};

/// Where the servers are.
pub struct Tools {
    pub python: PathBuf,
    pub everything: PathBuf,
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Installs them once per test process.
pub fn tools() -> &'static Tools {
    static TOOLS: OnceLock<Tools> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let out = std::process::Command::new("bash")
            .arg(repo().join("tests/mcp/setup.sh"))
            .stderr(Stdio::inherit())
            .output()
            .expect("cannot run tests/mcp/setup.sh");
        assert!(out.status.success(), "tests/mcp/setup.sh failed");
        let cache = PathBuf::from(String::from_utf8_lossy(&out.stdout).lines().last().unwrap_or("").trim());
        let tools = Tools {
            python: cache.join("venv/bin/python"),
            everything: cache.join("node_modules/.bin/mcp-server-everything"),
        };
        assert!(tools.python.exists() && tools.everything.exists(), "setup.sh left no servers in {}", cache.display());
        tools
    })
}

/// The FastMCP test server's script.
pub fn fastmcp_script() -> PathBuf {
    repo().join("tests/mcp/fastmcp_server.py").canonicalize().unwrap()
}

/// `{"command", "args"}` for the FastMCP server on stdio.
pub fn fastmcp_stdio() -> Value {
    json!({"command": tools().python, "args": [fastmcp_script(), "stdio"]})
}

/// `{"command", "args"}` for the reference server on stdio.
pub fn everything_stdio() -> Value {
    json!({"command": tools().everything, "args": ["stdio"]})
}

/// The FastMCP server on streamable HTTP: killed when dropped.
pub struct HttpServer {
    child: std::process::Child,
    pub url: String,
    pub port: u16,
}

impl HttpServer {
    /// Starts it and returns once it listens (it writes its port after `listen`).
    pub fn start(dir: &Path) -> HttpServer {
        HttpServer::start_with(dir, &[])
    }

    /// The same with more arguments: `json` (answers as JSON bodies, not event streams), a port to listen on.
    pub fn start_with(dir: &Path, more: &[&str]) -> HttpServer {
        let port_file = dir.join("port");
        let _ = std::fs::remove_file(&port_file);
        let mut child = std::process::Command::new(&tools().python)
            .arg(fastmcp_script())
            .arg("http")
            .arg(&port_file)
            .args(more)
            .env("PYTHONWARNINGS", "ignore")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("cannot start the FastMCP HTTP server");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let port = loop {
            if let Ok(p) = std::fs::read_to_string(&port_file) {
                break p;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("the FastMCP HTTP server exited: {status}");
            }
            assert!(std::time::Instant::now() < deadline, "the FastMCP HTTP server wrote no port in 30 s");
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        let port: u16 = port.trim().parse().expect("the port the server wrote");
        HttpServer { child, url: format!("http://127.0.0.1:{port}/mcp"), port }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether a process is still alive (a zombie counts as gone).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'),
        Err(_) => false,
    }
}

/// Waits (at most 10 s) for a process to be gone; whether it went.
pub fn gone(pid: i32) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while alive(pid) {
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    true
}
