# session 22, call 2: the fold with its constants before the wait (call 1's form loaded the scales
# and frequencies after it, and was 0.02 ms a step slower than no fold): the op test, then E4B and
# small decode / verify with the fold on and off, alternating, three rounds.
set -u
B=.carry/s22; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c2; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-10s %.4f ms" % (d["run"], d["ms_per_step"]))
    else: print("  %-10s verify %d rows %.4f ms = %.2f steps" % (d["run"], d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))'; }
timeout 150 $N/cuda_ops ops > $T/ops.txt 2>&1 & P0=$!
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "model rc $?"
wait $P0; el "ops rc $?"; grep -E "FAIL|differs|fold|all agree|raw|normalised" $T/ops.txt | cut -c1-220 | head -12
for r in 1 2 3; do
  DECODE_PROFILE_VERIFY="2 8" DECODE_PROFILE_CUSTOM="fold_$r:GEMMA_CUDA_ATTN_FOLD=1;nofold_$r:GEMMA_CUDA_ATTN_FOLD=0" timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_$r.txt 2>&1
done
el "e4b"; ms $T/e4b_1.txt $T/e4b_2.txt $T/e4b_3.txt
for r in 1 2; do
  DECODE_PROFILE_CUSTOM="fold_$r:GEMMA_CUDA_ATTN_FOLD=1;nofold_$r:GEMMA_CUDA_ATTN_FOLD=0" timeout 60 $N/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny_$r.txt 2>&1
done
el "tiny"; ms $T/tiny_1.txt $T/tiny_2.txt
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
