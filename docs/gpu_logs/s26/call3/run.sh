# session 26, call 3: why the MLP kernel made the E4B step slower in call 2 (3.64 against 3.15 ms):
# the ring's size (GEMMA_CUDA_MLP_RING, KiB) and one shared-memory carveout for every kernel
# (GEMMA_CUDA_CARVEOUT, percent) as experiments, ncu's isolated time of each kernel of one step
# with the MLP kernel; then the op test (its buffer overrun fixed) and the mid-sized twin.
B=.carry/s26 CALL=c3; . docs/gpu_logs/common.sh
cp $B/make_e4b_random.py tools/make_e4b_random.py
e4b_model
python3 tools/make_e4b_random.py /tmp/mid --mid --prompts 1 --prompt-len 32 --hf-new-tokens 2 > $T/make_mid.log 2>&1; el "mid rc $?"
timeout 120 $N/cuda_ops model /tmp/mid/model > $T/mid_model.txt 2>&1; el "mid model rc $?"; tail -4 $T/mid_model.txt
GEMMA_CUDA_MLP=0 timeout 120 $N/cuda_ops model /tmp/mid/model > $T/mid_model_off.txt 2>&1; el "mid model (mlp off) rc $?"; tail -2 $T/mid_model_off.txt
wait $PM; el "model rc $?"
C="on:GEMMA_CUDA_MLP=1;off:GEMMA_CUDA_MLP=0;r24:GEMMA_CUDA_MLP_RING=24;r48:GEMMA_CUDA_MLP_RING=48;r200:GEMMA_CUDA_MLP_RING=200;c50:GEMMA_CUDA_CARVEOUT=50;c50off:GEMMA_CUDA_MLP=0 GEMMA_CUDA_CARVEOUT=50;c100:GEMMA_CUDA_CARVEOUT=100;on2:GEMMA_CUDA_MLP=1;off2:GEMMA_CUDA_MLP=0"
DECODE_PROFILE_CUSTOM="$C" timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; ms $T/e4b.txt
DECODE_PROFILE_CUSTOM="ncu:" DECODE_PROFILE_NCU=1 timeout 150 ncu --profile-from-start off --graph-profiling node --cache-control none --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv $N/cuda_ops decode-profile /tmp/e4b/model 256 1 > $T/ncu.csv 2> $T/ncu.err; el "ncu rc $?"
python3 $B/ncu_step_split.py $T/ncu.csv > $T/ncu_split.md 2>&1; head -30 $T/ncu_split.md
timeout 200 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"; grep -E "FAIL|differ|MLP|mlp|all agree|double" $T/ops.txt | cut -c1-200 | head -12
cd $OUT && tar czf c3.tgz c3 && rm -rf c3
