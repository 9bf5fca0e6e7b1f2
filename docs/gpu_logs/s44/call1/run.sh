# session 44, call 1: how the share of the copy floor grows with the bytes a layer streams.
# new = main's binaries (no kernel change). The E4B-sized random model, then the same model with
# every MLP 4 and 2 times as wide (tools/make_e4b_random.py --mlp): the same kernels, the same
# dependencies a layer, more bytes between them. Each: decode-profile twice (processes of their
# own), then engine bench (2 prompts x (256 + 128), one of them warm-up) for bytes_per_token.
B=.carry/s44 CALL=c1; . docs/gpu_logs/common.sh
$N/cuda_ops copy-bw > $T/copy_bw.txt 2>&1; el "copy-bw rc $?"; tail -1 $T/copy_bw.txt
variant() { # NAME [MLP width]
    local d=/tmp/w$1
    python3 tools/make_e4b_random.py $d --prompts 2 --prompt-len 256 --hf-new-tokens 2 \
        ${2:+--mlp $2} > $T/make_$1.log 2>&1
    el "make $1 rc $?"; grep -E "^built|^saved" $T/make_$1.log | cut -c1-120
    for r in a b; do
        DECODE_PROFILE_CUSTOM="$1$r:" timeout 90 $N/cuda_ops decode-profile $d/model 256 128 \
            > $T/prof_$1$r.txt 2>&1
        el "prof $1$r rc $?"; ms $T/prof_$1$r.txt
    done
    ENGINE_DEVICE=cuda WARMUP_NUM_PROMPTS=1 MAX_NEW_TOKENS=128 timeout 150 $N/engine bench \
        $d/model --prompts $d/prompts.jsonl > $T/bench_$1.out 2> $T/bench_$1.err
    el "bench $1 rc $?"; tail -1 $T/bench_$1.out | cut -c1-400
    rm -rf $d
}
variant e4b
variant x4 40960
variant x2 20480
gzip -f $T/*.err
