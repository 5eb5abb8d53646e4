"""A language server that floods: nothing for what it is opened with, then thousands of errors (argv[1],
default 5000) for every change, all at once in one publish."""
import sys

sys.dont_write_bytecode = True
import lsp_frame  # noqa: E402

COUNT = int(sys.argv[1]) if len(sys.argv) > 1 else 5000


def flood(doc):
    errors = [lsp_frame.diagnostic(0, 0, "flood error %d" % i) for i in range(COUNT)]
    lsp_frame.publish(doc.uri, doc.version, errors)


lsp_frame.serve_documents(flood)
