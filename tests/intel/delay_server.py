"""A language server that takes a known time: it publishes (nothing) for what it is opened with at once,
and for each change, DELAY_MS (argv[1]) later, one error naming the version; after each publish it appends
"<version> <unix time in seconds>" to LOG (argv[2]), the moment the publish was written (the benchmark's
reference: how long a round waits beyond the server's own publish)."""
import sys
import time

sys.dont_write_bytecode = True
import lsp_frame  # noqa: E402

DELAY = int(sys.argv[1]) / 1000.0
LOG = open(sys.argv[2], "a", buffering=1)


def changed(doc):
    time.sleep(DELAY)
    error = lsp_frame.diagnostic(0, 0, "checked version %d" % doc.version, severity=2)
    lsp_frame.publish(doc.uri, doc.version, [error])
    LOG.write("%d %.6f\n" % (doc.version, time.time()))


lsp_frame.serve_documents(changed)
