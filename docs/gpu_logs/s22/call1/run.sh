# session 22, call 1: the attention fold (c8a2d79: the q / k / v norms, RoPE and KV writes done by
# a decode row's cluster attention kernel, GEMMA_CUDA_ATTN_FOLD=1 by default): the op test (its
# new fold check: two decode steps against the chunk without the fold, bit for bit), test_gpu.sh
# steps 2, 3 and 5; E4B and small decode / verify with the fold on and off, alternating; racecheck
# and memcheck of the op test (small shapes).
set -u
B=.carry/s22; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c1; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-10s %.4f ms" % (d["run"], d["ms_per_step"]))
    else: print("  %-10s verify %d rows %.4f ms = %.2f steps" % (d["run"], d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))'; }
timeout 150 $N/cuda_ops ops > $T/ops.txt 2>&1 & P0=$!
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "model rc $?"
wait $P0; el "ops rc $?"; grep -E "FAIL|differs|fold|attention|all agree|raw|normalised" $T/ops.txt | cut -c1-220 | head -12
V="2 4 8"
for r in 1 2; do
  DECODE_PROFILE_VERIFY="$V" DECODE_PROFILE_CUSTOM="fold_$r:GEMMA_CUDA_ATTN_FOLD=1;nofold_$r:GEMMA_CUDA_ATTN_FOLD=0" timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_$r.txt 2>&1
done
el "e4b"; ms $T/e4b_1.txt $T/e4b_2.txt
grep -h "cuda:" $T/e4b_1.txt | cut -c1-400 | sort -u | head -3
for r in 1 2; do
  DECODE_PROFILE_VERIFY="$V" DECODE_PROFILE_CUSTOM="fold_$r:GEMMA_CUDA_ATTN_FOLD=1;nofold_$r:GEMMA_CUDA_ATTN_FOLD=0" timeout 60 $N/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny_$r.txt 2>&1
done
el "tiny"; ms $T/tiny_1.txt $T/tiny_2.txt
timeout 240 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 240 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3 5" LOG_DIR=$T/tests timeout 150 scripts/test_gpu.sh > $T/test235.txt 2>&1; el "steps 2 3 5 rc $?"
grep -E "FAIL|max.gpu-cpu|greedy output|all GPU|identical;" $T/test235.txt | cut -c1-160 | head -20
wait $P1; r1=$?; wait $P2; r2=$?; el "memcheck rc $r1, racecheck rc $r2"; tail -n 2 $T/memcheck.log $T/racecheck.log
cd $OUT && tar czf c1.tgz c1 && rm -rf c1
