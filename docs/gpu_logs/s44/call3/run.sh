# session 44, call 3. old = main before this session's code (f282dea); new = GEMMA_CUDA_GEMM=auto
# the default (bf16 prefill chunks on cuBLAS with x exact, f16 on our kernels), the whole-MLP
# kernel's partials sized for 16 inputs at first use.
# 1. sanitized_checks (racecheck / memcheck / synccheck of the small op test, the full op test,
#    test_gpu.sh steps 2 3 5), memcheck of a whole-model run, the mid twin; untimed.
# 2. E4B: engine bench (2 prompts x (256 + 128), one warm-up), old and new defaults, two rounds.
B=.carry/s44 CALL=c3; . docs/gpu_logs/common.sh
python3 tools/make_e4b_random.py /tmp/e4b --prompts 2 --prompt-len 256 --hf-new-tokens 2 \
    > $T/make.log 2>&1 &
PM=$!
sanitized_checks
timeout 300 compute-sanitizer --tool memcheck --error-exitcode 3 $N/cuda_ops model \
    tests/engine/fixtures/a_ple_kvshare > $T/memcheck_model.log 2>&1
el "memcheck model rc $?"; tail -1 $T/memcheck_model.log | cut -c1-200
python3 tools/make_e4b_random.py /tmp/mid --mid --prompts 1 --prompt-len 32 --hf-new-tokens 2 \
    > $T/make_mid.log 2>&1; el "mid rc $?"
timeout 120 $N/cuda_ops model /tmp/mid/model > $T/mid_model.txt 2>&1; el "mid model rc $?"
tail -5 $T/mid_model.txt
wait $PM; el "e4b model rc $?"
for r in a b; do
    for bin in old new; do
        ENGINE_DEVICE=cuda WARMUP_NUM_PROMPTS=1 MAX_NEW_TOKENS=128 timeout 100 $B/$bin/engine \
            bench /tmp/e4b/model --prompts /tmp/e4b/prompts.jsonl > $T/bench_$bin$r.out \
            2> $T/bench_$bin$r.err
        el "bench $bin $r rc $?"
        tail -1 $T/bench_$bin$r.out | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print("  prefill %.1f decode %.2f tokens/s, hash %s" % (d["prefill_tps"], d["decode_tps"], d.get("output_hash")))'
    done
done
gzip -f $T/make.log $T/*.err $T/*.log 2>/dev/null
cd $OUT && tar czf c3.tgz c3 && rm -rf c3
