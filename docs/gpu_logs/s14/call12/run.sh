# session 14, call 12: decode products through matvec_rows_kernel (GEMMA_CUDA_MV_DECODE=rows: a
# warp takes 2 or 4 rows and loads each chunk of x once for them, as step_shape's split layout
# with arithmetic suggests). bench-matvec shape by shape, the E4B step A/B, and test_gpu.sh steps
# 1-2 with the switch exported (bit-exactness of verify against decode included).
set -u
B=.carry/s14; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c12; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
timeout 120 $N/cuda_ops bench-matvec > $T/bench_matvec.txt 2>&1; el "bench-matvec rc $?"; cut -c1-400 $T/bench_matvec.txt | grep "^|"
(python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make rc $?" >> $T/make_e4b.log) & MK=$!
GEMMA_CUDA_MV_DECODE=rows GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="1 2" LOG_DIR=$T/tests timeout 200 scripts/test_gpu.sh > $T/test12.txt 2>&1; el "steps 1-2 (rows) rc $?"
grep -E "FAIL|all GPU" $T/test12.txt | head -4
wait $MK; el "$(tail -1 $T/make_e4b.log)"
summ() { python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l); print("%-10s %.4f ms" % (d["run"], d["ms_per_step"]))'; }
D=GEMMA_CUDA_MV_DECODE
DECODE_PROFILE_CUSTOM="default:;rows:$D=rows;rows_all:$D=rows GEMMA_CUDA_MV_ROWS_MIN=0;rows4:$D=rows GEMMA_CUDA_MV_ROWS=4;default2:;rows2:$D=rows" timeout 150 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; grep -h '"run"' $T/e4b.txt | summ
DECODE_PROFILE_CUSTOM="default:;rows:$D=rows;default2:;rows2:$D=rows" timeout 60 $N/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny.txt 2>&1; el "tiny rc $?"; grep -h '"run"' $T/tiny.txt | summ
cd $OUT && tar czf c12.tgz c12 && rm -rf c12
