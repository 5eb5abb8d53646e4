//! Stdin and stdout for the agent. The SDK's own `Stdio` ends the connection on a line that is not
//! UTF-8 and holds a line of any length in memory; here every line reaches the SDK as text (invalid bytes
//! replaced, so it is answered as a parse error) and a line over `MAX_LINE` is skipped unread, answered
//! the same way. Stdin is read on a thread of its own, so a read still waiting never holds up the exit.

use std::io::{BufRead, Write as _};

use agent_client_protocol::{Agent, ConnectTo, Lines};
use futures::Stream;

/// The longest line read (the sidecar's frame limit).
pub const MAX_LINE: usize = 64 * 1024 * 1024;
/// What the SDK gets instead of a line over the limit: not JSON, so it answers `-32700`.
const TOO_LONG: &str = "(a line over 64 MiB, skipped unread)";

pub(crate) fn transport() -> impl ConnectTo<Agent> + 'static {
    let stdout = blocking::Unblock::new(std::io::stdout());
    let outgoing = futures::sink::unfold(stdout, |mut out, line: String| async move {
        use futures::AsyncWriteExt;
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        out.write_all(&bytes).await?;
        out.flush().await?;
        Ok::<_, std::io::Error>(out)
    });
    Lines::new(Box::pin(outgoing), Box::pin(stdin_lines()))
}

fn stdin_lines() -> impl Stream<Item = std::io::Result<String>> + Send + 'static {
    let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<String>>(16);
    let spawned = std::thread::Builder::new().name("stepwise-stdin".into()).spawn(move || {
        let mut stdin = std::io::stdin().lock();
        loop {
            let line = match read_line(&mut stdin, MAX_LINE) {
                Ok(None) => break,
                Ok(Some(line)) => Ok(line),
                Err(e) => Err(e),
            };
            let failed = line.is_err();
            if tx.blocking_send(line).is_err() || failed {
                break;
            }
        }
    });
    if let Err(e) = spawned {
        tracing::error!("cannot start the stdin reader: {e}");
        let _ = std::io::stderr().flush();
    }
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|line| (line, rx)) })
}

/// The next line without its newline (`\r\n` too); `Ok(None)` at the end of input.
fn read_line(r: &mut impl BufRead, max: usize) -> std::io::Result<Option<String>> {
    let mut buf = Vec::new();
    let mut over = false;
    loop {
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            if buf.is_empty() && !over {
                return Ok(None);
            }
            break;
        }
        let (take, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        if !over && buf.len() + take > max {
            // Skipped from here to the newline, never held.
            over = true;
            buf = Vec::new();
        }
        if !over {
            buf.extend_from_slice(&chunk[..take]);
        }
        r.consume(if done { take + 1 } else { take });
        if done {
            break;
        }
    }
    if over {
        return Ok(Some(TOO_LONG.to_string()));
    }
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    Ok(Some(String::from_utf8(buf).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], max: usize) -> Vec<String> {
        let mut r = std::io::BufReader::with_capacity(4, input);
        std::iter::from_fn(|| read_line(&mut r, max).unwrap()).collect()
    }

    #[test]
    fn lines_are_bounded_and_always_text() {
        assert_eq!(lines(b"{}\n{\"a\":1}\r\nlast", 100), ["{}", "{\"a\":1}", "last"]);
        assert_eq!(lines(b"0123456789\nok\n", 5), [TOO_LONG, "ok"]);
        assert_eq!(lines(b"12345\n", 5), ["12345"]);
        assert_eq!(lines(b"\xff{\n", 10), ["\u{fffd}{"]);
        assert_eq!(lines(b"\n", 10), [""]);
        assert!(lines(b"", 10).is_empty());
    }
}
