# session 44, call 2. old = main (f282dea's binaries); new = the cuBLAS path of GEMMA_CUDA_GEMM=
# cublas / auto multiplying fp32 x exactly for bf16 weights (x split into three bf16, one product
# over the 3n inputs, k_sum3), the op test's cuBLAS check at 1e-5 for bf16. Default still `own`.
# 1. correctness, untimed: the op test (own kernels + the cuBLAS backend), then with
#    GEMMA_CUDA_GEMM=auto: test_gpu.sh steps 2 3 5 and the mid twin (old too: its rounded x
#    failed that check in sessions 24-26), memcheck of the small op test.
# 2. E4B prefill and decode: engine bench, 2 prompts x (256 + 128), one warm-up, old / new x
#    own / auto, each a process of its own, two rounds.
B=.carry/s44 CALL=c2; . docs/gpu_logs/common.sh
python3 tools/make_e4b_random.py /tmp/e4b --prompts 2 --prompt-len 256 --hf-new-tokens 2 \
    > $T/make.log 2>&1 &
PM=$!
export GEMMA_CUDA_GEMM=auto
correctness
GEMMA_CUDA_GEMM=auto timeout 120 $B/old/cuda_ops model /tmp/mid/model > $T/mid_model_old.txt 2>&1
el "old mid model rc $?"; tail -4 $T/mid_model_old.txt
unset GEMMA_CUDA_GEMM
timeout 300 compute-sanitizer --tool memcheck --error-exitcode 3 $N/cuda_ops ops small \
    > $T/memcheck.log 2>&1
el "memcheck rc $?"; tail -1 $T/memcheck.log | cut -c1-200
wait $PM; el "e4b model rc $?"
for r in a b; do
    for bin in old new; do
        for g in own auto; do
            GEMMA_CUDA_GEMM=$g ENGINE_DEVICE=cuda WARMUP_NUM_PROMPTS=1 MAX_NEW_TOKENS=128 \
                timeout 100 $B/$bin/engine bench /tmp/e4b/model --prompts /tmp/e4b/prompts.jsonl \
                > $T/bench_${bin}_$g$r.out 2> $T/bench_${bin}_$g$r.err
            el "bench $bin $g $r rc $?"
            tail -1 $T/bench_${bin}_$g$r.out | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print("  prefill %.1f decode %.2f tokens/s, hash %s" % (d["prefill_tps"], d["decode_tps"], d.get("output_hash")))'
        done
    done
done
gzip -f $T/make.log $T/*.err $T/memcheck.log
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
