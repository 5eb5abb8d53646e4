"""A language server that reports an error on each line of a document containing BAD ("bad line"), for
every version it is fed. When a document's text contains AFFECT, it also reports, for the first time, an
error in other.py beside it (a file it was never fed), as a server's first check of an unopened file
does: an old error, not caused by the change. With --skip-open it reports nothing for what a document is
opened with (as a server that checks only after a pause, and the change came first): only changes."""
import sys

sys.dont_write_bytecode = True
import lsp_frame  # noqa: E402

SKIP_OPEN = "--skip-open" in sys.argv[1:]


def errors(text):
    return [lsp_frame.diagnostic(i, 0, "bad line") for i, line in enumerate(text.split("\n")) if "BAD" in line]


def check(doc):
    if "AFFECT" in doc.text:
        other = doc.uri.rsplit("/", 1)[0] + "/other.py"
        lsp_frame.publish(other, None, [lsp_frame.diagnostic(0, 0, "old error in other")])
    lsp_frame.publish(doc.uri, doc.version, errors(doc.text))


lsp_frame.serve_documents(check, on_open=(lambda doc: None) if SKIP_OPEN else check)
