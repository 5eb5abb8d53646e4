#!/usr/bin/env bash
# Checks that the `stepwise` and `stepwise-llm` packages compile for macOS, on this Linux machine and without a Mac's SDK:
# clippy (rustc's check plus its lints) of the library, binary and unit tests for aarch64-apple-darwin and
# x86_64-apple-darwin, with -D warnings. Nothing is linked.
#   - Debian's rustc-web, cargo-web, rust-web-clippy and rust-web-src (bookworm-security, 1.96): a compiler
#     with the standard library's source, which `-Zbuild-std` (RUSTC_BOOTSTRAP=1) builds for the target.
#   - cargo-zigbuild and ziglang (PyPI) compile the C code of dependencies (ring) for the target with zig cc.
# apt packages are installed when missing; the PyPI ones and the build directory are cached in
# ~/.cache/stepwise-tools/cross (a warm run re-checks only stepwise: seconds).
# Usage: tests/cross/check.sh [TARGET...]     (default: both macOS targets)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
CACHE="${STEPWISE_TOOLS_DIR:-$HOME/.cache/stepwise-tools}/cross"
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(aarch64-apple-darwin x86_64-apple-darwin)
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

echo "-- Debian's Rust with the standard library's source"
PKGS=(rustc-web cargo-web rust-web-clippy rust-web-src)
installed=$(dpkg-query -W -f='${db:Status-Status}\n' "${PKGS[@]}" 2>/dev/null | grep -c '^installed$' || true)
if [ "$installed" -ne ${#PKGS[@]} ]; then
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${PKGS[@]}" > /dev/null
fi
# rustc-web installs into /usr/bin; a rustup toolchain earlier on PATH must not take its place.
export RUSTC=/usr/bin/rustc CARGO=/usr/bin/cargo
"$RUSTC" --version
[ -d "$("$RUSTC" --print sysroot)/lib/rustlib/src/rust/library/std" ] || { echo "rust-web-src: no std source" >&2; exit 1; }

echo "-- cargo-zigbuild and ziglang (PyPI, cached in $CACHE)"
mkdir -p "$CACHE"
if [ ! -x "$CACHE/venv/bin/cargo-zigbuild" ] || ! "$CACHE/venv/bin/python" -m ziglang version > /dev/null 2>&1; then
  rm -rf "$CACHE/venv"
  python3 -m venv "$CACHE/venv"
  "$CACHE/venv/bin/pip" install --quiet --disable-pip-version-check cargo-zigbuild ziglang
fi
# cargo-zigbuild finds zig through `python3 -m ziglang`, so the venv's python comes first; then Debian's
# cargo and clippy (cargo-clippy runs the clippy-driver next to it).
export PATH="$CACHE/venv/bin:/usr/bin:$PATH"
echo "zig $(python3 -m ziglang version)"

export RUSTC_BOOTSTRAP=1
export CARGO_TARGET_DIR="$CACHE/target"
status=0
for target in "${TARGETS[@]}"; do
  echo "-- clippy -p stepwise -p stepwise-llm --target $target"
  log="$CACHE/$target.log"
  if cargo-zigbuild clippy --quiet -p stepwise -p stepwise-llm --all-targets --target "$target" \
    -Zbuild-std=std,panic_abort,test --manifest-path "$ROOT/Cargo.toml" -- -D warnings > "$log" 2>&1; then
    echo "ok: no errors, no warnings"
  else
    cat "$log"
    echo "FAILED: $target (log: $log)" >&2
    status=1
  fi
done
exit $status
