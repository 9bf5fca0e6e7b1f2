# session 15, call 6: decode products through matvec_rows_kernel with its first chunks loaded
# before the PDL wait (GEMMA_CUDA_MV_DECODE=rows), against the lean kernel and against the
# rows kernel without them (PREFETCH=0, as e733abf measured in session 14), on the E4B step;
# bench-matvec back to back.
set -u
B=.carry/s15; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c6; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
(python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make rc $?" >> $T/make_e4b.log) & MK=$!
timeout 120 $N/cuda_ops bench-matvec > $T/bench_matvec.txt 2>&1; el "bench-matvec rc $?"
wait $MK; el "$(tail -1 $T/make_e4b.log)"
R=GEMMA_CUDA_MV_DECODE=rows
DECODE_PROFILE_CUSTOM="lean:;rows:$R;rows_nopf:$R GEMMA_CUDA_MV_PREFETCH=0;rows_big:$R GEMMA_CUDA_MV_ROWS_MIN=60000;lean2:;rows2:$R" timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_ab.txt 2>&1
el "e4b rc $?"; grep -h '"run"' $T/e4b_ab.txt | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l); print("%-10s %.4f ms" % (d["run"], d["ms_per_step"]))'
cd $OUT && tar czf c6.tgz c6 && rm -rf c6
