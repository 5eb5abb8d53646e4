"""A language server that reports an error on each line of a document containing BAD ("bad line"), for
every version it is fed. When a document's text contains AFFECT, it also reports, for the first time, an
error in other.py beside it (a file it was never fed), as a server's first check of an unopened file
does: an old error, not caused by the change."""
import sys

sys.dont_write_bytecode = True
import lsp_frame  # noqa: E402


def errors(text):
    return [lsp_frame.diagnostic(i, 0, "bad line") for i, line in enumerate(text.split("\n")) if "BAD" in line]


def handle(msg):
    method = msg.get("method")
    params = msg.get("params", {})
    if method == "textDocument/didOpen":
        doc = params["textDocument"]
        text, version = doc["text"], doc["version"]
    elif method == "textDocument/didChange":
        doc = params["textDocument"]
        text, version = params["contentChanges"][-1]["text"], doc["version"]
    else:
        return False
    if "AFFECT" in text:
        other = doc["uri"].rsplit("/", 1)[0] + "/other.py"
        lsp_frame.publish(other, None, [lsp_frame.diagnostic(0, 0, "old error in other")])
    lsp_frame.publish(doc["uri"], version, errors(text))
    return True


lsp_frame.serve(handle)
