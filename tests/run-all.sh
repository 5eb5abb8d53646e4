#!/usr/bin/env bash
# Every test of the project: the Rust workspace (engine, mock model, LSP harness), then the Neovim
# plugin and the VS Code extension end to end. Each editor script installs what it needs.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo test (workspace)"
cargo build --workspace --bins
cargo test --workspace

echo "== neovim"
bash editors/neovim/scripts/test.sh

echo "== vscode"
bash editors/vscode/scripts/test.sh
