# session 18, call 5: the final code - bench/bench_gpu.sh (the headline, default switches: the
# attention split's early key / value loads), decode and verify costs on E4B with the CUDA-core
# products against the tensor cores (GEMMA_CUDA_MV_MMA=1), and bench/bench_spec_gpu.sh on the
# small model both ways (4 prompts x 256 tokens, one run per k).
set -u
B=.carry/s18; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c5; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-8s %.4f ms" % (d["run"], d["ms_per_step"]))
    else: print("  %-8s verify %d rows %.4f ms = %.2f steps" % (d["run"], d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))'; }
GPU_BIN_DIR=$N WORK_DIR=/tmp/e4b timeout 420 bench/bench_gpu.sh $T/bench > $T/bench.log 2>&1; el "bench_gpu rc $?"
grep -E "copy bandwidth|engine decode tps|share of the floor|CUDA graphs \(|transformers .* decode tps|our decode speed" $T/bench/bench_gpu.md | cut -c1-200
rm -f $T/bench/*.csv
DECODE_PROFILE_VERIFY="2 3 4 5 8" DECODE_PROFILE_CUSTOM="cc:;mma:GEMMA_CUDA_MV_MMA=1;cc2:;mma2:GEMMA_CUDA_MV_MMA=1" timeout 120 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_verify.txt 2>&1; el "e4b verify rc $?"; ms $T/e4b_verify.txt
DECODE_PROFILE_VERIFY="2 3 4 5 8" DECODE_PROFILE_CUSTOM="cc:;mma:GEMMA_CUDA_MV_MMA=1" timeout 60 $N/cuda_ops decode-profile models/gemma4-tiny 256 512 > $T/tiny_verify.txt 2>&1; el "tiny verify rc $?"; ms $T/tiny_verify.txt
GPU_BIN_DIR=$N PROMPTS=4 NEW_TOKENS=256 REPEATS=1 OUT=$T/spec_cc.md LOG_DIR=$T/spec_cc timeout 100 bench/bench_spec_gpu.sh > $T/spec_cc.log 2>&1; el "spec cc rc $?"
GEMMA_CUDA_MV_MMA=1 GPU_BIN_DIR=$N PROMPTS=4 NEW_TOKENS=256 REPEATS=1 OUT=$T/spec_mma.md LOG_DIR=$T/spec_mma timeout 100 bench/bench_spec_gpu.sh > $T/spec_mma.log 2>&1; el "spec mma rc $?"
for f in $T/spec_cc.md $T/spec_mma.md; do echo "== $f"; grep -E "^\| *[0-9] \|" $f | head -9 | cut -c1-150; done
cd $OUT && tar czf c5.tgz c5 && rm -rf c5
