# session 26, call 2: kernels/mlp.cu in the engine (GEMMA_CUDA_MLP, on by default) - the op test
# (test_fused_whole_mlp: against the CPU, n-row launches against n = 1 bit for bit), sanitizers
# over `ops small`, the mid-sized structural twin of E4B (tools/make_e4b_random.py --mid) GPU vs
# CPU with chunks reproducing single steps, and the E4B step with the switch on / off alternating.
B=.carry/s26 CALL=c2; . docs/gpu_logs/common.sh
cp $B/make_e4b_random.py tools/make_e4b_random.py   # the --mid option (this tree's copy may predate it)
timeout 300 compute-sanitizer --tool memcheck --error-exitcode 3 $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 300 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
e4b_model
python3 tools/make_e4b_random.py /tmp/mid --mid --prompts 1 --prompt-len 32 --hf-new-tokens 2 > $T/make_mid.log 2>&1; el "mid rc $?"
timeout 200 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"; grep -E "FAIL|differ|MLP|mlp|all agree" $T/ops.txt | cut -c1-200 | head -12
timeout 120 $N/cuda_ops model /tmp/mid/model > $T/mid_model.txt 2>&1; el "mid model rc $?"; tail -6 $T/mid_model.txt
GEMMA_CUDA_MLP=0 timeout 120 $N/cuda_ops model /tmp/mid/model > $T/mid_model_off.txt 2>&1; el "mid model (mlp off) rc $?"; tail -3 $T/mid_model_off.txt
wait $PM; el "model rc $?"; wait $P1; el "memcheck rc $?"; wait $P2; el "racecheck rc $?"
tail -3 $T/memcheck.log; tail -3 $T/racecheck.log
C="on_a:GEMMA_CUDA_MLP=1;off_a:GEMMA_CUDA_MLP=0;on_b:GEMMA_CUDA_MLP=1;off_b:GEMMA_CUDA_MLP=0;on_c:GEMMA_CUDA_MLP=1;off_c:GEMMA_CUDA_MLP=0"
DECODE_PROFILE_VERIFY="2 8" DECODE_PROFILE_CUSTOM="$C" timeout 240 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; ms $T/e4b.txt
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
