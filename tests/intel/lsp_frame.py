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


class Document:
    """A document a didOpen or didChange carries: its uri, version and whole text (the servers stepwise
    starts are fed full text), and whether it was just opened."""

    def __init__(self, uri, version, text, opened):
        self.uri, self.version, self.text, self.opened = uri, version, text, opened


def document(msg):
    """The document of a didOpen or didChange; None for any other message."""
    method = msg.get("method")
    params = msg.get("params", {})
    if method == "textDocument/didOpen":
        doc = params["textDocument"]
        return Document(doc["uri"], doc["version"], doc["text"], True)
    if method == "textDocument/didChange":
        doc = params["textDocument"]
        return Document(doc["uri"], doc["version"], params["contentChanges"][-1]["text"], False)
    return None


def serve_documents(on_change, on_open=None, on_other=None, capabilities=None):
    """`serve` for a server that reacts to documents: `on_change(doc)` for each change, `on_open(doc)`
    for what a document is opened with (by default: publish no diagnostics for it), `on_other(msg)` for
    any other message (returns False to leave a request answered with null)."""
    def handle(msg):
        doc = document(msg)
        if doc is None:
            return on_other(msg) if on_other else False
        if doc.opened:
            (on_open or (lambda d: publish(d.uri, d.version, [])))(doc)
        else:
            on_change(doc)
        return True

    serve(handle, capabilities)


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
