#!/usr/bin/env bash
# Every test of the project: formatting and lints (for macOS too, cross-checked), the Rust workspace (engine,
# mock model, LSP harness), checkpoints on XFS with reflink (a loop-mounted image), a real model server
# (llama.cpp), ACP clients (acpx, the TypeScript SDK), then the Neovim plugin, Emacs's eglot and the VS Code extension end to end. Each script installs what it needs (cached under ~/.cache/stepwise-tools).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check, clippy"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings

echo "== macOS: clippy for aarch64-apple-darwin and x86_64-apple-darwin (cross-checked here, not linked)"
bash tests/cross/check.sh

echo "== cargo test (workspace)"
# The Python language server the code-intelligence tests run against (cached; fails loudly if it cannot install).
bash "$(dirname "$0")/intel/setup.sh" >/dev/null
cargo build --workspace --bins
cargo test --workspace

echo "== checkpoints on a copy-on-write file system (XFS with reflink on a loop device)"
bash tests/cow/test.sh

echo "== llama-server (real model, both wire formats)"
bash tests/llama/test.sh

echo "== acp (acpx and the TypeScript SDK against stepwise acp)"
bash tests/acp/test.sh

echo "== neovim"
bash editors/neovim/scripts/test.sh

echo "== emacs (eglot, no stepwise-specific code)"
bash editors/emacs/test.sh

echo "== vscode"
bash editors/vscode/scripts/test.sh
