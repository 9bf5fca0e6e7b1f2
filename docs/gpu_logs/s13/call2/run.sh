# session 13, call 2: the L2 prefetch compiled apart (default kernel back to 34 registers).
# E4B step A/B: prev = ea92357 (last session's final) against new (HEAD) with L2 off / line / bulk at caps 8, 32 MiB,
# alternating processes, two rounds; then bench-matvec of new.
set -u
B=.carry/s13c2; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; P=$B/prev; T=$OUT/c2; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
python3 tools/make_e4b_random.py /tmp/e4b --prompts 2 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; el "make rc $?"
C="off:;line:GEMMA_CUDA_MV_L2=line;bulk:GEMMA_CUDA_MV_L2=bulk;line8:GEMMA_CUDA_MV_L2=line GEMMA_CUDA_MV_L2_MB=8;bulk8:GEMMA_CUDA_MV_L2=bulk GEMMA_CUDA_MV_L2_MB=8;off2:"
for i in 1 2; do
  DECODE_PROFILE_CUSTOM="prev:" timeout 60 $P/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/prev_$i.txt 2>&1
  DECODE_PROFILE_CUSTOM="$C" timeout 60 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/new_$i.txt 2>&1
  el "round $i: $(grep -h '"run"' $T/prev_$i.txt $T/new_$i.txt | sed 's/.*"run": "\([a-z_0-9]*\)".*"ms_per_step": \([0-9.]*\).*/\1 \2/' | tr '\n' ' ')"
done
timeout 90 $N/cuda_ops bench-matvec > $T/bench_matvec.txt 2>&1; el "bench-matvec rc $?"; cut -c1-260 $T/bench_matvec.txt | tail -12
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
