# session 26, call 4: the ring's stage index without a runtime division (call 3: the MLP kernel 55 us
# a layer in isolation against the bench's ~38); E4B on / off alternating, ncu per kernel (engine
# step, and the bench kernel alone for comparison), the mid-sized twin, the op test.
B=.carry/s26 CALL=c4; . docs/gpu_logs/common.sh
cp $B/make_e4b_random.py tools/make_e4b_random.py
e4b_model
python3 tools/make_e4b_random.py /tmp/mid --mid --prompts 1 --prompt-len 32 --hf-new-tokens 2 > $T/make_mid.log 2>&1; el "mid rc $?"
timeout 120 $N/cuda_ops model /tmp/mid/model > $T/mid_model.txt 2>&1; el "mid model rc $?"; tail -4 $T/mid_model.txt
timeout 60 ncu --kernel-name regex:mlp_slice --launch-count 6 --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv $B/mlp_slice > $T/ncu_bench.csv 2>&1; el "ncu bench rc $?"; grep -E 'gpu__time' $T/ncu_bench.csv | cut -c1-250 | head -6
wait $PM; el "model rc $?"
C="on:GEMMA_CUDA_MLP=1;off:GEMMA_CUDA_MLP=0;on2:GEMMA_CUDA_MLP=1;off2:GEMMA_CUDA_MLP=0;r48:GEMMA_CUDA_MLP_RING=48;r160:GEMMA_CUDA_MLP_RING=160"
DECODE_PROFILE_CUSTOM="$C" timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; ms $T/e4b.txt
DECODE_PROFILE_CUSTOM="ncu:" DECODE_PROFILE_NCU=1 timeout 150 ncu --profile-from-start off --graph-profiling node --cache-control none --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv $N/cuda_ops decode-profile /tmp/e4b/model 256 1 > $T/ncu.csv 2> $T/ncu.err; el "ncu rc $?"
python3 $B/ncu_step_split.py $T/ncu.csv > $T/ncu_split.md 2>&1; head -16 $T/ncu_split.md
timeout 200 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"; grep -E "FAIL|differ|MLP|mlp|all agree|double" $T/ops.txt | cut -c1-200 | head -12
cd $OUT && tar czf c4.tgz c4 && rm -rf c4
