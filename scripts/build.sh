#!/usr/bin/env bash
# build.sh [BUILD_DIR] [extra cmake args...]: configure and build (default folder: build).
#
# Builds every target unless BUILD_TARGETS names some (e.g. BUILD_TARGETS="tuner engine", what
# the main command needs). The CUDA backend is built wherever nvcc exists, GPU or not, so CI
# compiles and links it although it cannot run it; -DWITH_CUDA=OFF leaves it out. WITH_CUDA is
# set on every call, so a folder configured without CUDA by one call gets it back on the next.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
# The CUDA toolkit lives in its usual prefix on our machines; CMake finds nvcc through PATH.
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
    export PATH=/usr/local/cuda/bin:$PATH
fi
cuda=OFF
command -v nvcc >/dev/null && cuda=ON
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWITH_CUDA=$cuda "$@" >/dev/null
targets=()
for t in ${BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$dir" -j "$(nproc)" "${targets[@]}"
