//! The process's HTTP clients: one for plain `http://` endpoints (local servers), one for `https://`.
//!
//! Connection pools are shared by every session of the process, so keep-alive connections are reused
//! between rounds. The TLS client, and with it the root certificates (compiled in: no system files are
//! read, and the binary links no OpenSSL), is built only when an https endpoint is first used.
//! Silence timeouts are applied per request by the caller (see `http.rs`), so one client serves every
//! timeout setting.

use std::sync::Mutex;
use std::time::Duration;

static PLAIN: Mutex<Option<reqwest::Client>> = Mutex::new(None);
static TLS: Mutex<Option<reqwest::Client>> = Mutex::new(None);

/// How long a TCP (and TLS) connection may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// stepwise's policy for poisoned locks (its `locks` module): recover the data, which is always replaced
/// whole here.
pub(crate) fn lock<T: ?Sized>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The shared client for `base_url`; an error (never a panic) when it cannot be built.
pub fn for_url(base_url: &str) -> Result<reqwest::Client, String> {
    let tls = base_url.trim_start().get(..8).is_some_and(|s| s.eq_ignore_ascii_case("https://"));
    let slot = if tls { &TLS } else { &PLAIN };
    // A poisoned lock only means another thread panicked while building; the slot is still usable.
    let mut slot = lock(slot);
    if let Some(c) = slot.as_ref() {
        return Ok(c.clone());
    }
    let client = reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .tcp_nodelay(true)
        .pool_idle_timeout(Duration::from_secs(90))
        .tls_built_in_root_certs(tls)
        .https_only(false)
        .user_agent(concat!("stepwise/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot set up the HTTP client: {}", super::error::describe(&e)))?;
    *slot = Some(client.clone());
    Ok(client)
}
