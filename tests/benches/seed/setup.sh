#!/usr/bin/env bash
# The seed's Python harness for tests/benches/harness.rs: a venv with the Anthropic SDK (from PyPI) under
# ${STEPWISE_TOOLS_DIR:-~/.cache/stepwise-tools}/seed-venv, made once. Prints the venv's python on stdout.
set -euo pipefail
tools_dir="${STEPWISE_TOOLS_DIR:-$HOME/.cache/stepwise-tools}"
venv="$tools_dir/seed-venv"
log() { printf '[seed-setup] %s\n' "$*" >&2; }
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import anthropic' 2>/dev/null; then
  mkdir -p "$tools_dir"
  py="$(command -v python3 || true)"
  if [ -z "$py" ]; then
    log "python3 not found; installing it with apt-get"
    apt-get update -qq && apt-get install -y -qq python3 python3-venv >/dev/null
    py="$(command -v python3)"
  fi
  rm -rf "$venv"
  if ! "$py" -m venv "$venv" 2>/dev/null; then
    log "python3 -m venv failed; installing python3-venv with apt-get"
    rm -rf "$venv"
    apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
    "$py" -m venv "$venv"
  fi
  log "installing the anthropic SDK into $venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check anthropic >&2
fi
echo "$venv/bin/python"
