# session 20, call 2: the cluster form's shape - warps a block for heads up to 256 wide / 512
# wide (ATTX_W, an experiment switch of this build only) and blocks a cluster (ATTX_C): E4B and
# small decode and verify costs, one process a variant, two rounds, against the split form.
set -u
B=.carry/s20; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c2; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-12s %.4f ms" % (d["run"], d["ms_per_step"]))
    else: print("  %-12s verify %d rows %.4f ms = %.2f steps" % (d["run"], d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))'; }
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "model rc $?"
V="2 4 8"
run() { # label model prompt steps [ATTX_W ATTX_C]
  if [ "$5" = split ]; then
    DECODE_PROFILE_VERIFY="$V" DECODE_PROFILE_CUSTOM="$1:GEMMA_CUDA_ATTN=split" timeout 60 $N/cuda_ops decode-profile $2 $3 $4
  else
    ATTX_W=$5 ATTX_C=$6 DECODE_PROFILE_VERIFY="$V" DECODE_PROFILE_CUSTOM="$1:GEMMA_CUDA_ATTN=cluster" timeout 60 $N/cuda_ops decode-profile $2 $3 $4
  fi; }
for m in e4b tiny; do
  if [ $m = e4b ]; then M=/tmp/e4b/model; S=64; else M=models/gemma4-tiny; S=256; fi
  for r in 1 2; do
    run split_$r $M 256 $S split > $T/${m}_split$r.txt 2>&1
    run w16.8c16_$r $M 256 $S 16,8 16 > $T/${m}_A$r.txt 2>&1
    run w8.8c16_$r $M 256 $S 8,8 16 > $T/${m}_B$r.txt 2>&1
    run w8.4c16_$r $M 256 $S 8,4 16 > $T/${m}_C$r.txt 2>&1
    run w4.4c16_$r $M 256 $S 4,4 16 > $T/${m}_D$r.txt 2>&1
    run w8.4c8_$r $M 256 $S 8,4 8 > $T/${m}_E$r.txt 2>&1
    run w16.8c8_$r $M 256 $S 16,8 8 > $T/${m}_F$r.txt 2>&1
  done
  el "$m"; for r in 1 2; do ms $T/${m}_split$r.txt $T/${m}_[A-F]$r.txt; done
done
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
