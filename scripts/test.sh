#!/usr/bin/env bash
# test.sh: the project's test command. From a fresh Debian 12 machine: installs what is
# missing, builds from scratch, runs every ctest suite, checks that a Release build compiles,
# then builds again under AddressSanitizer + UndefinedBehaviorSanitizer and runs the suites
# again there.
# The CUDA files are compiled and linked in the first build (nvcc is present, no GPU);
# the GPU tests themselves run on the GPU machine (see README).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/check_includes.sh # no two files of engine/, kernels/, tuner/, common/ depend on each other

rm -rf build-test build-asan
./scripts/build.sh build-test
# Where nvcc exists (it does on CI, without a GPU), every CUDA file must have compiled and linked.
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
    [ -f build-test/kernels/libenginecuda.a ] || { echo "test.sh: nvcc found but the CUDA kernels were not built" >&2; exit 1; }
fi
(cd build-test && ctest --output-on-failure -j "$(nproc)")

# A Release build (-O3, host code only) must compile too: -O3 inlines more, and GCC's
# flow-based warnings (maybe-uninitialized, nonnull) are errors under -Werror.
rm -rf build-release
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DWITH_CUDA=OFF >/dev/null
cmake --build build-release -j "$(nproc)"
rm -rf build-release

./scripts/build.sh build-asan -DSANITIZE=ON -DWITH_CUDA=OFF
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-asan && ctest --output-on-failure -j "$(nproc)" -LE nosanitize)

# The tuner's parsers under libFuzzer (clang): 100000 inputs a target from a fixed seed; any
# crash, leak or sanitizer report fails.
tests/fuzz/run_fuzz.sh 60 build-fuzz
echo "test.sh: all tests passed"
