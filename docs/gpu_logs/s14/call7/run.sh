# session 14, call 7: the stream decode kernel (GEMMA_CUDA_MV_DECODE=stream with the slices split
# rule). Correctness: test_gpu.sh steps 1-3 with both exported (the op test's variants then
# compare lean / lean8 / general / persist with slices against stream bit for bit), memcheck of
# the small op test. Speed: E4B step A/B/A/B, products alone, and the small model.
set -u
B=.carry/s14; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c7; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
(python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make rc $?" >> $T/make_e4b.log) & MK=$!
ST="GEMMA_CUDA_MV_DECODE=stream GEMMA_CUDA_MV_SPLIT=slices"
env $ST timeout 200 compute-sanitizer --tool memcheck --error-exitcode 3 $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
env $ST GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="1 2 3" LOG_DIR=$T/tests timeout 220 scripts/test_gpu.sh > $T/test123.txt 2>&1; el "steps 1-3 (stream) rc $?"
grep -E "FAIL|greedy output|expected|identical" $T/test123.txt | cut -c1-180 | head -14
wait $P1; el "memcheck rc $?"; tail -n 1 $T/memcheck.log
wait $MK; el "$(tail -1 $T/make_e4b.log)"
SK="DECODE_PROFILE_SKIP=split,merge,nrk,normadd,rmsnorm,elementwise"
R="default:;stream:$ST;lean_slices:GEMMA_CUDA_MV_SPLIT=slices;default2:;stream2:$ST;prod_default:$SK;prod_stream:$SK $ST"
summ() { python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l); print("%-14s %.4f ms" % (d["run"], d["ms_per_step"]))'; }
DECODE_PROFILE_CUSTOM="$R" timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; grep -h '"run"' $T/e4b.txt | summ
DECODE_PROFILE_CUSTOM="default:;stream:$ST;default2:;stream2:$ST" timeout 100 $N/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny.txt 2>&1; el "tiny rc $?"; grep -h '"run"' $T/tiny.txt | summ
cd $OUT && tar czf c7.tgz c7 && rm -rf c7
