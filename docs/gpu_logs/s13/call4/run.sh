# session 13, call 4: why a verify over 5 positions (k = 4) costs 2.40 decode steps when one over 4 (k = 3) costs 1.67.
# (a) the per-family profile (GEMMA_CUDA_PROFILE=1: every op timed, graphs off) of the small model's speculative bench
# at k = 3, 4 and 8 (HEAD of call 3 = new); (b) graph runs at k = 3..8 of new against nt4 = the same code with inputs
# n = 5..8 taken 4 at a time (matvec.cu launch: `n <= 4` -> `n <= 8`, so rows are read twice; bits unchanged).
set -u
B=.carry/s13c4; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c4; mkdir -p $T
head -n 2 models/gemma4-tiny/eval/prompts_tune.jsonl > /tmp/p2.jsonl
for k in 3 4 8; do
  GEMMA_CUDA_PROFILE=1 ENGINE_DEVICE=cuda NUM_SPECULATIVE_TOKENS=$k MAX_NEW_TOKENS=128 WARMUP_NUM_PROMPTS=0 timeout 60 $N/engine bench models/gemma4-tiny --prompts /tmp/p2.jsonl > $T/prof_k$k.json 2> $T/prof_k$k.err
  echo "== profile k=$k rc $?"; grep -E "^  (matvec|rmsnorm|norm/rope|attention|argmax|total)" $T/prof_k$k.err
done
for k in 3 4 5 6 7 8; do
  for v in new nt4; do
    ENGINE_DEVICE=cuda NUM_SPECULATIVE_TOKENS=$k MAX_NEW_TOKENS=128 WARMUP_NUM_PROMPTS=1 timeout 60 $B/$v/engine bench models/gemma4-tiny --prompts /tmp/p2.jsonl > $T/run_${v}_k$k.json 2> $T/run_${v}_k$k.err
    echo "k=$k $v rc $?: $(tail -n 1 $T/run_${v}_k$k.json | python3 -c 'import json,sys; d=json.load(sys.stdin); print({k: d[k] for k in d if k in ("decode_tps","tps","output_hash")})' 2>&1 | cut -c1-200)"
  done
done
cd $OUT && tar czf c4.tgz c4 && rm -rf c4
