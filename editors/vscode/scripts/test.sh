#!/usr/bin/env bash
# Tests the VS Code extension on a fresh machine or a warm one:
#   installs what it needs (npm ci, code-server, Debian's chromium), builds the extension, runs the unit tests,
#   packages the platform-specific .vsix with the release server inside (`npm run package`), builds the mock
#   model and runs the end-to-end test in code-server from the .vsix alone (no `stepwise` on PATH).
# Usage: editors/vscode/scripts/test.sh            (from anywhere; exits non-zero on any failure)
# Environment:
#   STEPWISE_TOOLS_DIR   where code-server is cached (default ~/.cache/stepwise-tools)
#   STEPWISE_SHARED_DIR  the shared folder with tools/install-code-server.sh (default <repo>/../shared)
#   STEPWISE_SKIP_E2E=1  unit tests and packaging only
#   STEPWISE_E2E_KEEP=1  keep the e2e scratch folder (/tmp/stepwise-e2e-*)
#   STEPWISE_E2E_FILES   the e2e files to run, space-separated (default: all of test/e2e/*.test.mjs)
#   STEPWISE_VSIX_SERVER package this already built server instead of building the release one (a quicker check)
# Artifacts (git-ignored): editors/vscode/test-artifacts/ (final.png, server.log, transcript.log, ...; plan-edit/,
# rewind/, transcript/ and mcp/ for the other e2e files).
# The last line is `N passed, N failed`.
set -uo pipefail

EXT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REPO=$(git -C "$EXT_DIR" rev-parse --show-toplevel 2>/dev/null || (cd "$EXT_DIR/../.." && pwd))
TOOLS=${STEPWISE_TOOLS_DIR:-$HOME/.cache/stepwise-tools}
SHARED=${STEPWISE_SHARED_DIR:-$REPO/../shared}
CODE_SERVER_DIR="$TOOLS/code-server"
TARGET=${CARGO_TARGET_DIR:-$REPO/target}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/stepwise-vscode-test.XXXXXX")
START=$(date +%s)

passed=0
failed=0
problems=()

summary() {
  local rc=$?
  rm -rf "$WORK"
  echo
  echo "vscode extension tests: $(( $(date +%s) - START ))s"
  if [ ${#problems[@]} -gt 0 ]; then
    printf 'failed: %s\n' "${problems[@]}"
  fi
  echo "$passed passed, $failed failed"
  if [ "$failed" -gt 0 ] && [ "$rc" -eq 0 ]; then exit 1; fi
}
trap summary EXIT

log() { printf '\n==> %s\n' "$*"; }
fail() { failed=$((failed + 1)); problems+=("$1"); echo "FAILED: $1" >&2; }
# A step that must work for anything after it: on failure, count it and stop.
must() {
  local what=$1; shift
  if ! "$@"; then fail "$what"; exit 1; fi
}
# Adds the counts of a node test runner TAP file.
count_tap() {
  local file=$1 p f
  p=$(grep -E '^# pass [0-9]+' "$file" | tail -1 | awk '{print $3}')
  f=$(grep -E '^# fail [0-9]+' "$file" | tail -1 | awk '{print $3}')
  passed=$((passed + ${p:-0}))
  failed=$((failed + ${f:-0}))
  [ -n "$p" ]
}
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# ---- install --------------------------------------------------------------------------------------------
cd "$EXT_DIR"
log "npm ci (editors/vscode)"
lock_hash=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ -f node_modules/.stepwise-lock-hash ] && [ "$(cat node_modules/.stepwise-lock-hash)" = "$lock_hash" ]; then
  echo "node_modules up to date"
else
  must "npm ci" npm ci --no-audit --no-fund
  echo "$lock_hash" > node_modules/.stepwise-lock-hash
fi

if [ "${STEPWISE_SKIP_E2E:-}" != 1 ]; then
  log "code-server (cached in $CODE_SERVER_DIR)"
  installer="$SHARED/tools/install-code-server.sh"
  [ -f "$installer" ] || installer=/work/shared/tools/install-code-server.sh
  mkdir -p "$TOOLS"
  must "install code-server" bash "$installer" "$CODE_SERVER_DIR"

  log "chromium"
  if ! command -v chromium >/dev/null 2>&1; then
    must "apt-get update" as_root apt-get update -qq
    must "apt-get install chromium" as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
  fi
  chromium --version || true
fi

# ---- build ----------------------------------------------------------------------------------------------
log "build the extension (tsc + esbuild)"
must "build the extension" npm run --silent build

log "unit tests"
if node --test --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=tap --test-reporter-destination="$WORK/unit.tap" out/test/unit/; then :; fi
count_tap "$WORK/unit.tap" || fail "unit tests did not run"

log "package the .vsix (npm run package: release server + vsce package --target)"
rm -f stepwise-*.vsix
VSIX=""
package_args=()
[ -n "${STEPWISE_VSIX_SERVER:-}" ] && package_args=(-- --server "$STEPWISE_VSIX_SERVER")
if npm run --silent package "${package_args[@]}" > "$WORK/package.log" 2>&1; then
  VSIX=$(tail -n 1 "$WORK/package.log")
fi
cat "$WORK/package.log"
# The package carries the server, executable, and says which platform it is for.
# (Listings are read whole: `grep -q` closing the pipe early would fail it under pipefail.)
if [ -n "$VSIX" ] && [ -f "$VSIX" ] \
  && [[ "$(unzip -Z "$VSIX" extension/server/stepwise 2>/dev/null)" == -rwx* ]] \
  && [[ "$(unzip -p "$VSIX" extension.vsixmanifest)" == *'TargetPlatform="linux-x64"'* ]]; then
  passed=$((passed + 1))
  unzip -l "$VSIX"
else
  fail "npm run package: a linux-x64 .vsix with an executable server/stepwise"
fi

# ---- end to end -----------------------------------------------------------------------------------------
if [ "${STEPWISE_SKIP_E2E:-}" = 1 ]; then
  echo "STEPWISE_SKIP_E2E=1: end-to-end test skipped"
  exit 0
fi
[ -n "$VSIX" ] && [ -f "$VSIX" ] || exit 1

log "build the mock model (cargo)"
must "cargo build -p stepwise-tests --bin mock-model" bash -c "cd '$REPO' && cargo build -p stepwise-tests --bin mock-model"

log "end-to-end test in code-server"
read -r -a e2e_files <<< "${STEPWISE_E2E_FILES:-$(echo test/e2e/*.test.mjs)}"
if MOCK_MODEL_BIN="$TARGET/debug/mock-model" \
  CODE_SERVER_DIR="$CODE_SERVER_DIR" \
  VSIX="$VSIX" \
  CHROMIUM="$(command -v chromium)" \
  ARTIFACTS_DIR="$EXT_DIR/test-artifacts" \
  timeout 1500 node --test --test-concurrency=1 --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=tap --test-reporter-destination="$WORK/e2e.tap" "${e2e_files[@]}"; then :; fi
count_tap "$WORK/e2e.tap" || fail "the end-to-end test did not run"
echo "artifacts: $EXT_DIR/test-artifacts"
