"""A language server that publishes (nothing) for what it is opened with and crashes at the first change.
With --nul it publishes for every change too, and crashes only when it is fed text holding a NUL byte."""
import sys

sys.dont_write_bytecode = True
import lsp_frame  # noqa: E402

ONLY_NUL = "--nul" in sys.argv[1:]


def crash():
    sys.stderr.write("crash_server: boom\n")
    sys.exit(3)


def opened(doc):
    if "\0" in doc.text:
        crash()
    lsp_frame.publish(doc.uri, doc.version, [])


def changed(doc):
    if not ONLY_NUL or "\0" in doc.text:
        crash()
    lsp_frame.publish(doc.uri, doc.version, [])


lsp_frame.serve_documents(changed, on_open=opened)
