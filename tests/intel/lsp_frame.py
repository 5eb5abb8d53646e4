"""LSP framing for the tests' fake language servers: read a message, send one, and a loop that answers
initialize and hands every other message to the server's own handler. Imported by the *_server.py scripts
(each sets sys.dont_write_bytecode before importing it, so no __pycache__ lands in the tree)."""
import json
import sys


def read():
    """The next message, or exit when the client closed the pipe."""
    length = 0
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            sys.exit(0)
        line = line.strip()
        if not line:
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(sys.stdin.buffer.read(length))


def send(msg):
    msg = dict(msg, jsonrpc="2.0")
    body = json.dumps(msg).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()


def reply(msg, result):
    send({"id": msg["id"], "result": result})


def publish(uri, version, diagnostics):
    send({"method": "textDocument/publishDiagnostics",
          "params": {"uri": uri, "version": version, "diagnostics": diagnostics}})


def diagnostic(line, character, message, severity=1):
    pos = {"line": line, "character": character}
    return {"range": {"start": pos, "end": pos}, "severity": severity, "message": message, "source": "fake"}


def serve(handle, capabilities=None):
    """Answers initialize with `capabilities` (full text sync by default), then calls `handle(msg)` for
    every other message; a request `handle` leaves unanswered (it returns False) is answered with null."""
    caps = capabilities or {"textDocumentSync": 1}
    while True:
        msg = read()
        method = msg.get("method")
        if method == "initialize":
            reply(msg, {"capabilities": caps})
        elif method == "shutdown":
            reply(msg, None)
        elif method == "exit":
            sys.exit(0)
        elif handle(msg) is False and "id" in msg and method:
            reply(msg, None)
