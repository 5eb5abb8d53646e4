#!/usr/bin/env bash
# Pictures of the chat and the review for README: Neovim in xterm under Xvfb, against the real server and the
# scripted mock model (tests/screenshot.lua drives it), captured with ImageMagick's `import`.
#   editors/neovim/scripts/screenshot.sh [OUT_DIR]   (default: editors/neovim/screenshots)
# Installs xvfb, xterm, imagemagick and fonts-dejavu-core with apt-get when missing; Neovim, the server and the
# mock model as scripts/test.sh does (STEPWISE_NVIM, STEPWISE_SKIP_BUILD=1 as there).
set -euo pipefail

plugin_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
repo_root="$(git -C "$plugin_dir" rev-parse --show-toplevel)"
out_dir="$(mkdir -p "${1:-$plugin_dir/screenshots}" && cd "${1:-$plugin_dir/screenshots}" && pwd)"
log() { printf '[neovim-screenshot] %s\n' "$*" >&2; }

if ! command -v Xvfb >/dev/null || ! command -v xterm >/dev/null || ! command -v import >/dev/null \
  || [ ! -e /usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf ]; then
  log "installing xvfb xterm imagemagick fonts-dejavu-core with apt-get"
  apt-get update -qq && apt-get install -y -qq --no-install-recommends xvfb xterm imagemagick fonts-dejavu-core >/dev/null
fi

nvim="${STEPWISE_NVIM:-${STEPWISE_TOOLS_DIR:-$HOME/.cache/stepwise-tools}/nvim-venv/bin/nvim}"
if ! "$nvim" --version >/dev/null 2>&1; then
  log "no Neovim at $nvim: run scripts/test.sh once (it installs it) or set STEPWISE_NVIM"
  exit 1
fi
if [ "${STEPWISE_SKIP_BUILD:-0}" != "1" ]; then
  (cd "$repo_root" && cargo build --quiet -p stepwise -p stepwise-tests)
fi
target_dir="${CARGO_TARGET_DIR:-$repo_root/target}"
export STEPWISE_BIN="${STEPWISE_BIN:-$target_dir/debug/stepwise}"
export STEPWISE_MOCK_MODEL="${STEPWISE_MOCK_MODEL:-$target_dir/debug/mock-model}"
export STEPWISE_REPO_ROOT="$repo_root"

work="$(mktemp -d "${TMPDIR:-/tmp}/stepwise-nvim-shot.XXXXXX")"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
export STEPWISE_SHOT_DIR="$work" STEPWISE_TEST_TMP="$work/tmp"
export XDG_CONFIG_HOME="$work/config" XDG_DATA_HOME="$work/data" XDG_STATE_HOME="$work/state" XDG_CACHE_HOME="$work/cache"
unset NVIM NVIM_APPNAME STEPWISE_PROVIDER MODEL_ID ANTHROPIC_BASE_URL OPENAI_BASE_URL OPENAI_API_KEY || true
mkdir -p "$STEPWISE_TEST_TMP"

# a free display
display=99
while [ -e "/tmp/.X11-unix/X$display" ] || [ -e "/tmp/.X$display-lock" ]; do display=$((display + 1)); done
Xvfb ":$display" -screen 0 1280x760x24 -nolisten tcp >"$work/xvfb.log" 2>&1 &
pids+=($!)
export DISPLAY=":$display"
for _ in $(seq 100); do [ -e "/tmp/.X11-unix/X$display" ] && break; sleep 0.1; done

xterm -geometry 150x40+0+0 -fa 'DejaVu Sans Mono' -fs 11 -bg '#14161b' -fg '#e0e2ea' -bw 0 +sb \
  -e "$nvim" -i NONE -u "$plugin_dir/tests/minimal_init.lua" -c "lua dofile([[$plugin_dir/tests/screenshot.lua]])" &
pids+=($!)

shoot() {
  local name="$1"
  for _ in $(seq 1200); do
    [ -e "$work/$name.ready" ] && break
    if [ -e "$work/error" ]; then log "failed: $(cat "$work/error")"; exit 1; fi
    sleep 0.1
  done
  [ -e "$work/$name.ready" ] || { log "timed out waiting for the $name view"; exit 1; }
  sleep 0.5 # the terminal draws what Neovim sent
  import -window root -crop 1280x700+0+0 +repage "$out_dir/$name.png"
  touch "$work/$name.done"
  log "wrote $out_dir/$name.png"
}
shoot chat
shoot review
