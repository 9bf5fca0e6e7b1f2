#!/usr/bin/env bash
# bench_matmul_cpu.sh: the CPU backend's matmul kernels beside this machine's memory read
# bandwidth, written to docs/bench/bench_matmul_cpu.md (figures, machine, the exact command and
# the commit), replacing the whole page.
#
# Decoding one token is a chain of matrix-vector products over every weight, so the decode
# matvec (n = 1) should read weights at close to the memory bandwidth. bench_matmul times a
# plain read of the same weights in passes interleaved with the matmul's (so that both see
# the same load on a shared machine) and the share column is matvec / plain read; bench/membw
# is printed beside it for reference. n = 8 and n = 64 (speculative verify, prefill chunks)
# reuse each weight row for several inputs and are reported in GFLOP/s.
#
#   bench/bench_matmul_cpu.sh [BUILD_DIR]     (default build-bench; configured and built here)
#
# Environment: MIB (weights per pass, default 768), PASSES (default 5), MEMBW_MIB (default
# 1024), OUT (default docs/bench/bench_matmul_cpu.md). Threads: OMP_NUM_THREADS.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-bench}
out=${OUT:-docs/bench/bench_matmul_cpu.md}
command_line="bench/bench_matmul_cpu.sh $*"
[ -n "${MIB:-}${PASSES:-}" ] && command_line="MIB=${MIB:-768} PASSES=${PASSES:-5} $command_line"

./scripts/build.sh "$build" -DWITH_CUDA=OFF >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== memory read bandwidth" >&2
"$build/bench/membw" "${MEMBW_MIB:-1024}" 10 >"$tmp/membw"
bw=$(tail -n 1 "$tmp/membw" | grep -o '"read_gbps": *[0-9.]*' | grep -o '[0-9.]*$')
echo "== matmul kernels" >&2
"$build/bench/bench_matmul" "${MIB:-768}" "${PASSES:-5}" >"$tmp/mm"
cat "$tmp/mm" >&2

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
threads=${OMP_NUM_THREADS:-$(nproc)}
load=$(cut -d' ' -f1-3 /proc/loadavg)
mkdir -p "$(dirname "$out")"
{
    echo "# CPU backend matmul kernels beside the memory bandwidth"
    echo
    echo "Written by \`$command_line\` on $(date -u '+%Y-%m-%d %H:%M UTC'),"
    echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), on $cpu, $(nproc) cores,"
    echo "$threads OpenMP threads; load average at the end: $load (other work on the machine"
    echo "lowers every figure; each is the best of several passes)."
    echo
    echo "Memory read bandwidth (bench/membw, measured just before): $bw GB/s."
    echo "$(head -n 1 "$tmp/mm" | sed 's/^# //'), multiplied by n input rows."
    echo
    echo "| kernels | n | ms per pass | matmul reads weights at GB/s | plain read of them GB/s | share | GFLOP/s |"
    echo "| --- | --- | --- | --- | --- | --- | --- |"
    grep -v '^#' "$tmp/mm" | while read -r isa n ms gbps rgbps gflops; do
        # the share of the read bandwidth means something for the memory-bound n = 1 only
        share=$(awk -v g="$gbps" -v b="$rgbps" -v n="$n" 'BEGIN { if (n == 1 && b > 0) printf "%.0f %%", 100 * g / b; else print "-" }')
        echo "| $isa | $n | $ms | $gbps | $rgbps | $share | $gflops |"
    done
    echo
    echo "n = 1 is the decode step: its share of the bandwidth is how close the engine's matvec"
    echo "comes to the CPU floor. The variant used at run time is the best the CPU supports"
    echo "(GEMMA_CPU_ISA caps it)."
} >"$out"
echo "wrote $out" >&2
