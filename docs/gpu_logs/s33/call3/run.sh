# session 33, call 3: the sequence's horizon (decoder_begin; kernels/attention.cu
# k_attention_splits) - full-attention layers of a long cache run as one cluster kernel when the
# sequence is short. new = the change; old = main's engine before it (call 1's, 36f81d9). Checks first (side by side, untimed): the
# op test (new horizon cases), test_gpu.sh steps 2 3 5 (the model test's new horizon check,
# lossless speculation with MAX_MODEL_LEN=4096), the mid twin, memcheck and racecheck over the
# op test's small shapes. Then E4B at MAX_MODEL_LEN=4096: decode-profile with and without the
# horizon (one process, alternating), the default capacity once more, and `engine bench`
# (2 x (256 + 512), the benchmark's form) new / old alternating.
B=.carry/s33 CALL=c3; . docs/gpu_logs/common.sh
python3 tools/make_e4b_random.py /tmp/e4b --prompts 2 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1 & PM=$!
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 3 $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P3=$!
timeout 200 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P4=$!
correctness
grep -h "horizon" $T/tests/models.log $T/tests/tiny_logits.log 2>/dev/null | cut -c1-200 | head -6
grep -h "maxlen4096" $T/test235.txt $T/tests/spec_lossless.log 2>/dev/null | head -2
wait $P3; el "memcheck rc $?"; tail -1 $T/memcheck.log
wait $P4; el "racecheck rc $?"; tail -1 $T/racecheck.log
wait $PM; el "e4b model rc $?"
H="DECODE_PROFILE_MAX_LEN=4096"
DECODE_PROFILE_CUSTOM="h:$H;none:$H DECODE_PROFILE_HORIZON=0;hb:$H;noneb:$H DECODE_PROFILE_HORIZON=0" \
    timeout 120 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/cap4096.txt 2>&1
el "cap 4096 rc $?"; ms $T/cap4096.txt
DECODE_PROFILE_CUSTOM="def:;defb:" timeout 120 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/def.txt 2>&1
el "default rc $?"; ms $T/def.txt
# (no old cuda_ops: the device's tree limit; the "none" rows are old's decisions at 4096)
for r in 1 2; do
    for b in new old; do
        ENGINE_DEVICE=cuda WARMUP_NUM_PROMPTS=1 MAX_NEW_TOKENS=512 MAX_MODEL_LEN=4096 timeout 120 \
            $B/$b/engine bench /tmp/e4b/model --prompts /tmp/e4b/prompts.jsonl > $T/bench_${b}_$r.out 2> $T/bench_${b}_$r.err
        el "bench $b $r rc $?"
        python3 -c "import json,sys; d=json.loads(open(sys.argv[1]).read().strip().splitlines()[-1]); print('  tps %.1f decode_tps %.1f hash %s' % (d['tps'], d['decode_tps'], d['output_hash']))" $T/bench_${b}_$r.out
    done
done
cd $OUT && tar czf c3.tgz c3
