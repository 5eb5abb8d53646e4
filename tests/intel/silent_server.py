"""A language server that answers initialize and never publishes diagnostics (the tests' deadline case)."""
import sys

sys.dont_write_bytecode = True
import lsp_frame  # noqa: E402

lsp_frame.serve(lambda msg: False)
