# session 17, call 8: are the explicit load groups (GEMMA_CUDA_MV_GROUP=auto, the default since
# session 16) still worth keeping with the fma-chain dot product? bench_gpu.sh (call 7) had the step
# without them at 3.333 ms against 3.346 / 3.339. E4B step, alternating in one process.
set -u
B=.carry/s17; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c8; mkdir -p $T
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make rc $?"
G=GEMMA_CUDA_MV_GROUP
DECODE_PROFILE_CUSTOM="auto1:;g01:$G=0;auto2:;g02:$G=0;auto3:;g03:$G=0;auto4:;g04:$G=0;auto5:;g05:$G=0" timeout 150 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_ab.txt 2>&1; echo "e4b rc $?"
grep -h '"run"' $T/e4b_ab.txt | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l); print("  %-8s %.4f ms" % (d["run"], d["ms_per_step"]))'
cd $OUT && tar czf c8.tgz c8 && rm -rf c8
