"""A language server whose answers point where they should not: after a change it reports an error at a
line past the end of the file and one in a file outside the workspace (/etc/passwd); definition answers
with a location past the end of the file, one in /etc/passwd and one through `..` out of the workspace."""
import sys

sys.dont_write_bytecode = True
import lsp_frame  # noqa: E402

OUTSIDE = "file:///etc/passwd"


def changed(doc):
    lsp_frame.publish(OUTSIDE, None, [lsp_frame.diagnostic(0, 0, "outside error")])
    lsp_frame.publish(doc.uri, doc.version, [
        lsp_frame.diagnostic(40, 2, "far error"),
        lsp_frame.diagnostic(0, 900, "wide error"),
    ])


def definition(msg):
    if msg.get("method") != "textDocument/definition":
        return False
    uri = msg["params"]["textDocument"]["uri"]
    here = uri.rsplit("/", 1)[0]
    at = lambda line, ch: {"start": {"line": line, "character": ch}, "end": {"line": line, "character": ch}}
    lsp_frame.reply(msg, [
        {"uri": uri, "range": at(99, 0)},
        {"uri": OUTSIDE, "range": at(0, 0)},
        {"uri": here + "/../../../../../../etc/passwd", "range": at(0, 0)},
    ])
    return True


lsp_frame.serve_documents(changed, on_other=definition)
