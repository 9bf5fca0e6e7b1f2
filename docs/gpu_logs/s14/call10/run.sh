# session 14, call 10: the one-kernel attention with the merge's loads batched over a thread's
# dims. Correctness: test_gpu.sh steps 2-3. Speed: E4B and the small model, prev (980d6e3)
# against new, alternating, two processes each; then attention left out (DECODE_PROFILE_SKIP)
# to see what it still costs.
set -u
B=.carry/s14; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c10; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
(python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make rc $?" >> $T/make_e4b.log) & MK=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3" LOG_DIR=$T/tests timeout 220 scripts/test_gpu.sh > $T/test23.txt 2>&1; el "steps 2-3 rc $?"
grep -E "FAIL|greedy output|all GPU" $T/test23.txt | cut -c1-180 | head -6
wait $MK; el "$(tail -1 $T/make_e4b.log)"
summ() { python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l); print("%-8s %.4f ms" % (d["run"], d["ms_per_step"]))'; }
for r in 1 2; do for b in prev new; do
  DECODE_PROFILE_RUNS=graphs timeout 60 $B/$b/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_${b}_$r.txt 2>&1
  el "e4b $b: $(grep -h '"run"' $T/e4b_${b}_$r.txt | summ)"
  DECODE_PROFILE_RUNS=graphs timeout 60 $B/$b/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny_${b}_$r.txt 2>&1
  el "tiny $b: $(grep -h '"run"' $T/tiny_${b}_$r.txt | summ)"
done; done
DECODE_PROFILE_CUSTOM="default:;noattn:DECODE_PROFILE_SKIP=attention;nonormadd:DECODE_PROFILE_SKIP=normadd" timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_skip.txt 2>&1; el "skip: $(grep -h '"run"' $T/e4b_skip.txt | summ | tr '\n' ' ')"
cd $OUT && tar czf c10.tgz c10 && rm -rf c10
