# session 20, call 3: the cluster form's shape around call 2's best (16 / 8 warps a block for
# heads up to 256 / 512 wide, clusters of 8): clusters of 4, and 4 warps for the 512-wide heads;
# E4B at a 256-token and a 2048-token prompt, the small model at 256; against the split form.
set -u
B=.carry/s20; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c3; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-14s %.4f ms" % (d["run"], d["ms_per_step"]))
    else: print("  %-14s verify %d rows %.4f ms = %.2f steps" % (d["run"], d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))'; }
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "model rc $?"
run() { # label model prompt steps verify ATTX_W|split ATTX_C
  if [ "$6" = split ]; then
    DECODE_PROFILE_VERIFY="$5" DECODE_PROFILE_CUSTOM="$1:GEMMA_CUDA_ATTN=split" timeout 60 $N/cuda_ops decode-profile $2 $3 $4
  else
    ATTX_W=$6 ATTX_C=$7 DECODE_PROFILE_VERIFY="$5" DECODE_PROFILE_CUSTOM="$1:GEMMA_CUDA_ATTN=cluster" timeout 60 $N/cuda_ops decode-profile $2 $3 $4
  fi; }
for c in e4b e4bL tiny; do
  case $c in e4b) M=/tmp/e4b/model; P=256; S=64; V="2 4 8";; e4bL) M=/tmp/e4b/model; P=2048; S=64; V="4";; tiny) M=models/gemma4-tiny; P=256; S=256; V="2 4 8";; esac
  for r in 1 2; do
    run split_$r $M $P $S "$V" split > $T/${c}_split$r.txt 2>&1
    run w16.8c8_$r $M $P $S "$V" 16,8 8 > $T/${c}_F$r.txt 2>&1
    run w16.8c4_$r $M $P $S "$V" 16,8 4 > $T/${c}_G$r.txt 2>&1
    run w16.4c8_$r $M $P $S "$V" 16,4 8 > $T/${c}_H$r.txt 2>&1
  done
  el "$c"; for r in 1 2; do ms $T/${c}_split$r.txt $T/${c}_[F-H]$r.txt; done
done
cd $OUT && tar czf c3.tgz c3 && rm -rf c3
