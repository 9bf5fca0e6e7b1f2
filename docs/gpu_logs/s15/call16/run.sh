# session 15, call 16: the matvec unroll by launch (auto: 4 for the decode gate + up pair, else 8)
# against 8 everywhere (the default before) and 4 everywhere, on the E4B step; test_gpu.sh steps
# 1-3 (the unroll never changes a row's sums); bench-matvec back to back.
set -u
B=.carry/s15; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c16; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
(python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make rc $?" >> $T/make_e4b.log) & MK=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="1 2 3" LOG_DIR=$T/tests timeout 240 scripts/test_gpu.sh > $T/test123.txt 2>&1; el "steps 1-3 rc $?"
grep -E "FAIL|greedy output|all GPU" $T/test123.txt | cut -c1-180 | head -8
timeout 60 $N/cuda_ops bench-matvec > $T/bench_matvec.txt 2>&1; el "bench-matvec rc $?"
wait $MK; el "$(tail -1 $T/make_e4b.log)"
V=GEMMA_CUDA_MV_UNROLL
DECODE_PROFILE_CUSTOM="auto:;u8:$V=8;auto2:;u82:$V=8;u4:$V=4;auto3:;u83:$V=8" timeout 150 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_ab.txt 2>&1
el "e4b rc $?"; grep -h '"run"' $T/e4b_ab.txt | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l); print("  %-6s %.4f ms" % (d["run"], d["ms_per_step"]))'
cd $OUT && tar czf c16.tgz c16 && rm -rf c16
