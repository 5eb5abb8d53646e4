#!/usr/bin/env bash
# stepwise under Emacs's eglot, a client with no stepwise-specific code, in `emacs --batch`:
# a run edits the open buffer (workspace/applyEdit), a shell command's approval (window/showMessageRequest)
# is answered, $/progress and the plan's log lines (window/logMessage) arrive, a hunk of the agent's change is
# kept and another undone through the server's code lenses (docs/editors.md's `stepwise-lens-at-point'), and shutdown
# is clean.
#   editors/emacs/test.sh
# Installs Debian's emacs-nox and elpa-eglot with apt-get when Emacs or eglot is missing (eglot is built in
# from Emacs 29). Builds the server and the mock model. Ends with "N passed, N failed".
# Environment: STEPWISE_EMACS (another emacs), STEPWISE_BIN (another server), STEPWISE_SKIP_BUILD=1, STEPWISE_E2E_KEEP=1 (keep the scratch folder).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(git -C "$here" rev-parse --show-toplevel 2>/dev/null || (cd "$here/../.." && pwd))"
emacs="${STEPWISE_EMACS:-emacs}"

log() { printf '[emacs-tests] %s\n' "$*" >&2; }
die() {
  echo "FAIL setup: $*"
  echo "0 passed, 1 failed"
  exit 1
}
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
has_eglot() { command -v "$emacs" >/dev/null 2>&1 && "$emacs" --batch -q --eval "(require 'eglot)" >/dev/null 2>&1; }

if ! has_eglot; then
  log "installing emacs-nox and elpa-eglot (apt-get)"
  as_root apt-get update -qq >/dev/null || die "apt-get update failed"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq emacs-nox elpa-eglot >/dev/null \
    || die "apt-get install emacs-nox elpa-eglot failed"
  has_eglot || die "Emacs with eglot is still not available"
fi
log "$("$emacs" --version | head -1), eglot from $("$emacs" --batch -q --eval "(progn (require 'eglot) (princ (locate-library \"eglot\")))" 2>/dev/null)"

if [ "${STEPWISE_SKIP_BUILD:-0}" != 1 ]; then
  log "cargo build -p stepwise -p stepwise-tests (bins)"
  (cd "$repo_root" && cargo build --quiet -p stepwise -p stepwise-tests --bins) || die "cargo build failed"
fi
target_dir="${CARGO_TARGET_DIR:-$repo_root/target}"
stepwise="${STEPWISE_BIN:-$target_dir/debug/stepwise}"
mock_bin="$target_dir/debug/mock-model"

work="$(mktemp -d "${TMPDIR:-/tmp}/stepwise-emacs-test.XXXXXX")"
mock_pid=""
cleanup() {
  if [ -n "$mock_pid" ]; then kill "$mock_pid" 2>/dev/null || true; fi
  if [ "${STEPWISE_E2E_KEEP:-}" = 1 ]; then log "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# The eglot recipe of docs/editors.md, exactly as written there (the elisp block of the "Emacs (eglot)" item).
awk '/\*\*Emacs \(eglot\)\*\*/ { item = 1 } item && /```elisp/ { code = 1; next } code && /```/ { exit } code' \
  "$repo_root/docs/editors.md" > "$work/recipe.el"
grep -q 'stepwise-run' "$work/recipe.el" || die "no eglot recipe with stepwise-run found in docs/editors.md"

mkdir -p "$work/demo" "$work/state" "$work/bin"
# The recipe starts `stepwise lsp' from PATH.
ln -s "$stepwise" "$work/bin/stepwise"
printf 'Hello from greet.txt\n\nBye from greet.txt\n' > "$work/demo/greet.txt"
plan() { printf '{"type":"turn","tool_calls":[{"name":"todo","input":{"items":[{"id":"1","text":"Make the greeting friendlier","status":"%s"}]}}]}' "$1"; }
cat > "$work/script.json" <<JSON
[
  $(plan in_progress),
  {"type":"turn","tool_calls":[{"name":"edit_file","input":{"path":"greet.txt","old_text":"Hello","new_text":"Hello, welcome to stepwise"}}]},
  {"type":"turn","tool_calls":[{"name":"edit_file","input":{"path":"greet.txt","old_text":"Bye","new_text":"Goodbye"}}]},
  {"type":"turn","tool_calls":[{"name":"bash","input":{"command":"grep -c welcome greet.txt"}}]},
  {"type":"turn","tool_calls":[{"name":"read_file","input":{"path":"greet.txt"}}]},
  $(plan completed),
  {"type":"turn","text":"The greeting is friendlier now."},
  {"type":"turn","text":"Saying goodbye next."}
]
JSON

# The mock model prints "listening http://127.0.0.1:PORT" once bound.
"$mock_bin" --script "$work/script.json" --record "$work/requests.jsonl" --quiet > "$work/mock.out" 2>&1 &
mock_pid=$!
url=""
for _ in $(seq 1 200); do
  url="$(sed -n 's/^listening \(http:[^ ]*\)$/\1/p' "$work/mock.out")"
  [ -n "$url" ] && break
  kill -0 "$mock_pid" 2>/dev/null || break
  sleep 0.05
done
[ -n "$url" ] || die "the mock model did not start: $(cat "$work/mock.out")"

set +e
env -u OPENAI_API_KEY -u OPENAI_BASE_URL -u STEPWISE_PROVIDER \
  HOME="$work" STEPWISE_STATE_DIR="$work/state" PATH="$work/bin:$PATH" STEPWISE_SANDBOX=off \
  ANTHROPIC_BASE_URL="$url" ANTHROPIC_API_KEY=emacs-test-key MODEL_ID=mock-model \
  STEPWISE_TEST_RECIPE="$work/recipe.el" STEPWISE_TEST_DIR="$work/demo" STEPWISE_TEST_RECORD="$work/requests.jsonl" \
  STEPWISE_TEST_EVENTS="$work/events.log" \
  timeout --kill-after=10 240 "$emacs" --batch -q -l "$here/eglot-test.el" > "$work/emacs.out" 2>"$work/emacs.err"
code=$?
set -e
cat "$work/emacs.out"
if [ "$code" -ne 0 ]; then
  log "emacs exited with $code; its messages:"
  tail -n 60 "$work/emacs.err" >&2
  if [ -f "$work/events.log" ]; then
    log "eglot's events buffer (tail):"
    tail -n 80 "$work/events.log" >&2
  fi
fi
if ! tail -n 1 "$work/emacs.out" | grep -qE '^[0-9]+ passed, [0-9]+ failed$'; then
  echo "0 passed, 1 failed"
  exit 1
fi
exit "$code"
