#!/usr/bin/env bash
# `stepwise acp` against ACP clients the project did not write, and the mock model:
#   - acpx (npm) with --approve-all (acpx offers terminals: the shell command runs in one of acpx's),
#     a background task (its own tool call, shown before the turn ends, never in acpx's terminals),
#     --deny-all and its default policy without a terminal;
#   - the official TypeScript SDK's client (sdk-client.mjs): cancel mid shell command, then session/load
#     in a new agent process, a prompt that continues the session, /compact, session/list and close.
# Every message the agent sends is checked against the JSON schema in @agentclientprotocol/sdk
# (validate.mjs; the validator is first shown to fail on a message missing a required field).
# acpx, the SDK and ajv are installed with npm once, cached in ~/.cache/stepwise-tools/acp.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
CACHE="${STEPWISE_TOOLS_DIR:-$HOME/.cache/stepwise-tools}/acp"

echo "-- npm packages (cached in $CACHE)"
mkdir -p "$CACHE"
if ! cmp -s tests/acp/package.json "$CACHE/package.json" || [ ! -x "$CACHE/node_modules/.bin/acpx" ]; then
  cp tests/acp/package.json "$CACHE/package.json"
  (cd "$CACHE" && npm install --no-audit --no-fund --prefer-offline --loglevel=error)
fi
ACPX="$CACHE/node_modules/.bin/acpx"

echo "-- build"
cargo build --quiet -p stepwise --bin stepwise -p stepwise-tests --bin mock-model
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}/debug"
BIN="$TARGET/stepwise"
MOCK="$TARGET/mock-model"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/stepwise-acp.XXXXXX")
MOCK_PID=""
cleanup() {
  if [ -n "$MOCK_PID" ]; then kill "$MOCK_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
ln -s "$CACHE/node_modules" "$WORK/node_modules"
cp tests/acp/*.mjs "$WORK/"

# Starts the mock model on a script; it answers once it has printed its address (no sleeping).
start_mock() {
  stop_mock
  exec {MOCK_FD}< <(exec "$MOCK" --script "$1" --record "$2" --quiet)
  MOCK_PID=$!
  local line
  read -r -u "$MOCK_FD" line
  MOCK_URL=${line#listening }
}
stop_mock() {
  if [ -n "$MOCK_PID" ]; then
    kill "$MOCK_PID" 2>/dev/null || true
    MOCK_PID=""
  fi
}

# A fresh workspace, state directory and HOME (acpx keeps its own files there) per scenario.
scenario() {
  DIR="$WORK/$1"
  mkdir -p "$DIR/ws" "$DIR/state" "$DIR/home"
  printf 'hello world\n' > "$DIR/ws/greeting.txt"
  start_mock "$ROOT/tests/acp/scripts/$2" "$DIR/model.jsonl"
}
agent_env() {
  env HOME="$DIR/home" ANTHROPIC_BASE_URL="$MOCK_URL" ANTHROPIC_API_KEY=test-key MODEL_ID=mock-model \
    STEPWISE_STATE_DIR="$DIR/state" STEPWISE_RETRY_BASE_MS=10 STEPWISE_SANDBOX=off "$@"
}
# acpx_exec EXPECTED_EXIT policy flags... exec PROMPT (acpx exits 5 when every permission was denied)
acpx_exec() {
  local want=$1 got=0
  shift
  agent_env "$ACPX" --agent "$BIN acp" --cwd "$DIR/ws" --format json --timeout 60 "$@" \
    > "$DIR/transcript.jsonl" 2> "$DIR/acpx.err" < /dev/null || got=$?
  if [ "$got" != "$want" ]; then
    echo "acpx exited $got, expected $want:"; cat "$DIR/acpx.err"; tail -5 "$DIR/transcript.jsonl"; return 1
  fi
}

echo "-- acpx --approve-all"
scenario approve approve.json
acpx_exec 0 --approve-all exec "fix the greeting and show it"
node "$WORK/expect.mjs" approve "$DIR/transcript.jsonl" "$DIR/model.jsonl" "$DIR/ws"
node "$WORK/validate.mjs" "$DIR/transcript.jsonl"
APPROVED="$DIR/transcript.jsonl"

echo "-- the validator fails a message missing a required field"
node -e '
  const fs = require("fs");
  const out = fs.readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean).map((l) => {
    const m = JSON.parse(l);
    if (m.params?.update?.sessionUpdate === "tool_call") delete m.params.update.title;
    return JSON.stringify(m);
  });
  fs.writeFileSync(process.argv[2], out.join("\n") + "\n");
' "$APPROVED" "$WORK/broken.jsonl"
if node "$WORK/validate.mjs" "$WORK/broken.jsonl" > "$WORK/broken.out" 2>&1; then
  echo "validate.mjs accepted tool_call updates without a title"; exit 1
fi
grep -q "must have required property 'title'" "$WORK/broken.out"
echo "validate: rejected, as it should"

echo "-- acpx --approve-all, a background task"
scenario background background.json
acpx_exec 0 --approve-all exec "start the server"
node "$WORK/expect.mjs" background "$DIR/transcript.jsonl" "$DIR/model.jsonl" "$DIR/ws"
node "$WORK/validate.mjs" "$DIR/transcript.jsonl"

echo "-- acpx --deny-all"
scenario deny deny.json
acpx_exec 5 --deny-all exec "try a command"
node "$WORK/expect.mjs" deny "$DIR/transcript.jsonl" "$DIR/model.jsonl" "$DIR/ws"
node "$WORK/validate.mjs" "$DIR/transcript.jsonl"

echo "-- acpx default policy, no terminal (asks, so denies)"
scenario default deny.json
acpx_exec 5 --non-interactive-permissions deny exec "try a command"
node "$WORK/expect.mjs" deny "$DIR/transcript.jsonl" "$DIR/model.jsonl" "$DIR/ws"
node "$WORK/validate.mjs" "$DIR/transcript.jsonl"

echo "-- TypeScript SDK client: cancel, then load in a new process, /compact, list, close"
scenario sdk cancel-load.json
agent_env node "$WORK/sdk-client.mjs" "$BIN" "$DIR/ws" "$DIR/transcript.jsonl"
node "$WORK/validate.mjs" "$DIR/transcript.jsonl"
stop_mock

echo "acp: all passed"
