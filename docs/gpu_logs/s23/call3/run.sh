# session 23, call 3: the final attention (positions a batch at a time, no switch). memcheck /
# racecheck of the op test while the model is built; the op test and test_gpu.sh steps 2, 3
# and 5 side by side; where the E4B step goes now (DECODE_PROFILE_SKIP runs in one process);
# bench/bench_gpu.sh alone (the headline).
set -u
B=.carry/s23; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c3; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-10s %.4f ms" % (d["run"], d["ms_per_step"]))
    else: print("  %-10s verify %d rows %.4f ms = %.2f steps" % (d["run"], d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))'; }
timeout 240 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 240 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "model rc $?"
wait $P1; el "memcheck rc $?"; wait $P2; el "racecheck rc $?"
tail -1 $T/memcheck.log; tail -1 $T/racecheck.log
timeout 150 $N/cuda_ops ops > $T/ops.txt 2>&1 & P0=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3 5" LOG_DIR=$T/tests timeout 170 scripts/test_gpu.sh > $T/test235.txt 2>&1; el "steps 2 3 5 rc $?"
wait $P0; el "ops rc $?"; grep -E "FAIL|differs|all agree" $T/ops.txt | cut -c1-200 | head -8
grep -E "FAIL|greedy output|all GPU|identical;" $T/test235.txt | cut -c1-160 | head -12
C="all_a:;no_attn:DECODE_PROFILE_SKIP=split;no_nrk:DECODE_PROFILE_SKIP=nrk;no_normadd:DECODE_PROFILE_SKIP=normadd;products_only:DECODE_PROFILE_SKIP=split,nrk,normadd,rmsnorm,elementwise;no_products:DECODE_PROFILE_SKIP=matvec;all_b:"
DECODE_PROFILE_CUSTOM="$C" timeout 120 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_skip.txt 2>&1; el "e4b skip rc $?"; ms $T/e4b_skip.txt
GPU_BIN_DIR=$N WORK_DIR=/tmp/e4b_bench timeout 330 bench/bench_gpu.sh $T/bench > $T/bench.log 2>&1; el "bench rc $?"
grep -E "tokens/s|floor|share|ms a step|copy" $T/bench/bench_gpu.md | head -20
cd $OUT && tar czf c3.tgz c3 && rm -rf c3
