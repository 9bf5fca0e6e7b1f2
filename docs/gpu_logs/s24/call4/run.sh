# session 24, call 4: the candidates of call 3 with the code they would ship with - the op test,
# memcheck / racecheck (small) and test_gpu.sh steps 2, 3, 5 all with EXP_NORM_PER=4 (norm_add_norm
# in 640 threads on E4B; the switch leaves rows of at most 1024 at a thread an element) and EXP_ATT_VNB2=1 (256-wide
# heads two positions a batch in verify chunks); E4B norm threads 1024 / 640 / 512 alternating;
# verify passes with and without EXP_ATT_VNB2 in both attention forms; the small model.
set -u
B=.carry/s24; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c4; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-10s %.4f ms" % (d["run"], d["ms_per_step"]))
    else: print("  %-10s verify %d rows %.4f ms = %.2f steps" % (d["run"], d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))'; }
export EXP_NORM_PER=4 EXP_ATT_VNB2=1
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 200 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1 & PM=$!
timeout 150 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"; grep -E "FAIL|differs|all agree" $T/ops.txt | cut -c1-200 | head -12
wait $PM; el "model rc $?"; wait $P1; el "memcheck rc $?"; wait $P2; el "racecheck rc $?"
tail -1 $T/memcheck.log; tail -1 $T/racecheck.log
unset EXP_NORM_PER EXP_ATT_VNB2
C="t1024_a:;t640_a:EXP_NORM_PER=4;t512_a:EXP_NORM_PER=5;t1024_b:;t640_b:EXP_NORM_PER=4;t512_b:EXP_NORM_PER=5;t1024_c:;t640_c:EXP_NORM_PER=4"
DECODE_PROFILE_CUSTOM="$C" timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; ms $T/e4b.txt
C="c4_a:;c2_a:EXP_ATT_VNB2=1;c4_b:;c2_b:EXP_ATT_VNB2=1;s4_a:GEMMA_CUDA_ATTN=split;s2_a:GEMMA_CUDA_ATTN=split EXP_ATT_VNB2=1"
DECODE_PROFILE_VERIFY="2 4 8" DECODE_PROFILE_CUSTOM="$C" timeout 150 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_verify.txt 2>&1; el "verify rc $?"; ms $T/e4b_verify.txt
DECODE_PROFILE_VERIFY="2 8" DECODE_PROFILE_CUSTOM="a:;b:EXP_NORM_PER=4 EXP_ATT_VNB2=1;c:;d:EXP_NORM_PER=4 EXP_ATT_VNB2=1" timeout 60 $N/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny.txt 2>&1; el "tiny rc $?"; ms $T/tiny.txt
EXP_NORM_PER=4 EXP_ATT_VNB2=1 GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3 5" LOG_DIR=$T/tests timeout 150 scripts/test_gpu.sh > $T/test235.txt 2>&1; el "steps 2 3 5 rc $?"
grep -E "FAIL|greedy output|all GPU|identical;|nll" $T/test235.txt | cut -c1-160 | head -12
cd $OUT && tar czf c4.tgz c4 && rm -rf c4
