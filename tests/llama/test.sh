#!/usr/bin/env bash
# stepwise against a real model server (llama.cpp's llama-server + Gemma 3 270M), over both wire formats.
# Installs what it needs through tests/llama/setup.sh (cached per machine), builds the stepwise binary, and runs
# the ignored tests of tests/tests/llama.rs. cargo test's own closing lines report the result.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"

eval "$(bash tests/llama/setup.sh | grep -E '^LLAMA_(SERVER|MODEL)=' | sed 's/^/export /')"
cargo build --quiet -p stepwise --bin stepwise
export STEPWISE_BIN="${CARGO_TARGET_DIR:-$repo/target}/debug/stepwise"
# One at a time: each test starts its own server, and the machine has two cores.
cargo test -p stepwise-tests --test llama -- --ignored --test-threads=1
