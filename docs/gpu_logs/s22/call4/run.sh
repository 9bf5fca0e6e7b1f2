# session 22, call 4: norm_add_norm in smaller blocks (GEMMA_CUDA_NORM_THREADS). Its 1024-thread
# block (40 registers a thread) cannot start beside the 4-5 blocks a multiprocessor of a one-wave
# product (down, o: 640 blocks, 48 registers) until two of them end; 256 threads (64 registers)
# fit beside four at once, so its scales may load before the product ends. The op test with 256
# (norm + add + norm against the CPU at 2560, 3000, 5376), then E4B decode / verify with 1024,
# 256 and 512, alternating in one process, two rounds.
set -u
B=.carry/s22; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c4; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-10s %.4f ms" % (d["run"], d["ms_per_step"]))
    else: print("  %-10s verify %d rows %.4f ms = %.2f steps" % (d["run"], d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))'; }
GEMMA_CUDA_NORM_THREADS=256 timeout 150 $N/cuda_ops ops > $T/ops256.txt 2>&1 & P0=$!
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "model rc $?"
wait $P0; el "ops (256) rc $?"; grep -E "FAIL|differs|all agree" $T/ops256.txt | cut -c1-220 | head -8
NT=GEMMA_CUDA_NORM_THREADS
for r in 1 2; do
  DECODE_PROFILE_VERIFY="2 8" DECODE_PROFILE_CUSTOM="t1024_$r:$NT=1024;t256_$r:$NT=256;t512_$r:$NT=512" timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_$r.txt 2>&1
done
el "e4b"; ms $T/e4b_1.txt $T/e4b_2.txt
cd $OUT && tar czf c4.tgz c4 && rm -rf c4
