"""A language server that publishes (nothing) for what it is opened with and crashes at the first change.
With --nul it publishes for every change too, and crashes only when it is fed text holding a NUL byte."""
import sys

sys.dont_write_bytecode = True
import lsp_frame  # noqa: E402

ONLY_NUL = "--nul" in sys.argv[1:]


def crash():
    sys.stderr.write("crash_server: boom\n")
    sys.exit(3)


def handle(msg):
    method = msg.get("method")
    params = msg.get("params", {})
    if method == "textDocument/didOpen":
        doc = params["textDocument"]
        if "\0" in doc["text"]:
            crash()
        lsp_frame.publish(doc["uri"], doc["version"], [])
    elif method == "textDocument/didChange":
        doc = params["textDocument"]
        if not ONLY_NUL or any("\0" in c["text"] for c in params["contentChanges"]):
            crash()
        lsp_frame.publish(doc["uri"], doc["version"], [])
    return False


lsp_frame.serve(handle)
