#!/usr/bin/env bash
# Installs the Python language server the code-intelligence tests run against (python-lsp-server with
# pyflakes, from PyPI) into a venv cached at ~/.cache/stepwise-tools/intel, once. Prints the venv's bin
# folder. Fails loudly (exit 1, a line on stderr) when it cannot install: the tests then fail, never pass.
set -euo pipefail
dir="${STEPWISE_INTEL_CACHE:-$HOME/.cache/stepwise-tools/intel}"
venv="$dir/venv"
if [ -x "$venv/bin/pylsp" ]; then
  echo "$venv/bin"
  exit 0
fi
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9
if [ ! -x "$venv/bin/pylsp" ]; then
  rm -rf "$venv.tmp"
  if ! python3 -m venv "$venv.tmp" >&2; then
    echo "tests/intel/setup.sh: cannot make a Python venv (python3 -m venv); install python3-venv" >&2
    exit 1
  fi
  if ! "$venv.tmp/bin/pip" install --quiet --disable-pip-version-check 'python-lsp-server[pyflakes]==1.12.*' >&2; then
    echo "tests/intel/setup.sh: cannot install python-lsp-server[pyflakes] from PyPI" >&2
    exit 1
  fi
  # A venv records its own path: make it at its final place.
  rm -rf "$venv.tmp"
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check 'python-lsp-server[pyflakes]==1.12.*' >&2
fi
echo "$venv/bin"
