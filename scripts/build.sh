#!/usr/bin/env bash
# build.sh [BUILD_DIR] [extra cmake args...]: configure and build (default folder: build).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
# The CUDA toolkit lives in its usual prefix on our machines; CMake finds nvcc through PATH.
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
    export PATH=/usr/local/cuda/bin:$PATH
fi
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$dir" -j "$(nproc)"
