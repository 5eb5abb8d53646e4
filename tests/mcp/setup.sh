#!/usr/bin/env bash
# Installs the MCP servers the tests talk to, none written here, cached in ~/.cache/stepwise-tools/mcp:
#   - the official Python SDK (PyPI `mcp`, pinned 1.x) for FastMCP servers (stdio and streamable HTTP);
#   - `@modelcontextprotocol/server-everything` (npm), the reference server.
# Prints the cache folder on its last line. Safe to run again: it reinstalls only when a pin changed.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
CACHE="${STEPWISE_TOOLS_DIR:-$HOME/.cache/stepwise-tools}/mcp"
PY_PIN="mcp==1.27.0"
mkdir -p "$CACHE"
# One installer at a time (test binaries, other checkouts on the same machine).
exec 9>"$CACHE/.lock"
flock 9
{
  if [ ! -x "$CACHE/venv/bin/python" ] || [ "$(cat "$CACHE/venv/pin" 2>/dev/null)" != "$PY_PIN" ]; then
    rm -rf "$CACHE/venv"
    python3 -m venv "$CACHE/venv"
    "$CACHE/venv/bin/pip" install --quiet --disable-pip-version-check "$PY_PIN"
    echo "$PY_PIN" > "$CACHE/venv/pin"
  fi
  if ! cmp -s "$HERE/package.json" "$CACHE/package.json" || [ ! -e "$CACHE/node_modules/.bin/mcp-server-everything" ]; then
    cp "$HERE/package.json" "$CACHE/package.json"
    (cd "$CACHE" && npm install --no-audit --no-fund --prefer-offline --loglevel=error)
  fi
} >&2
echo "$CACHE"
