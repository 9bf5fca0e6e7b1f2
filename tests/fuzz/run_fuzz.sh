#!/usr/bin/env bash
# run_fuzz.sh [SECONDS] [BUILD_DIR] [RUNS]: build the fuzz targets (clang, -DFUZZ=ON, in
# BUILD_DIR, default build-fuzz) and run each one from a fixed seed for RUNS inputs (default
# 100000), at most SECONDS (default 20), on its seed corpus: the tests' space files for the space
# loader, tests/fuzz/corpus/<target> for the others. The fixed seed and count make a run repeat
# exactly on any machine fast enough to finish it, so the test command never fails by chance;
# a longer exploration is `run_fuzz.sh 600 build-fuzz -1` (-1: no count). Any crash,
# leak, timeout or sanitizer report fails it; the input that did it is kept in
# BUILD_DIR/fuzz-artifacts/<target>/ and the fuzzer's log is printed.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-20}
dir=${2:-build-fuzz}
runs=${3:-100000}
cmake -S . -B "$dir" -DFUZZ=ON -DWITH_CUDA=OFF -DCMAKE_C_COMPILER=clang >/dev/null
cmake --build "$dir" -j "$(nproc)" --target fuzz_space fuzz_journal fuzz_result fuzz_manifest
for t in space journal result manifest; do
    case $t in
    space) seeds=(tests/tuner/spaces search_spaces tests/fuzz/corpus/space) ;;
    *) seeds=(tests/fuzz/corpus/$t) ;;
    esac
    work=$(mktemp -d)
    art="$dir/fuzz-artifacts/$t/"
    mkdir -p "$art"
    log="$dir/fuzz_$t.log"
    if ! "$dir/tests/fuzz/fuzz_$t" -max_total_time="$secs" -seed=1 -runs="$runs" -timeout=10 -rss_limit_mb=2048 \
        -max_len=65536 -close_fd_mask=1 -artifact_prefix="$art" "$work" "${seeds[@]}" >"$log" 2>&1; then
        tail -n 80 "$log" >&2
        echo "run_fuzz.sh: fuzz_$t failed; the input is in $art (log: $log)" >&2
        rm -rf "$work"
        exit 1
    fi
    echo "run_fuzz.sh: fuzz_$t: $(grep -o 'Done [0-9]* runs in [0-9]* second(s)' "$log" | tail -1)"
    rm -rf "$work"
done
