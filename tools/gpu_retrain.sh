#!/usr/bin/env bash
# gpu_retrain.sh: retrain the target and the drafter of the shipped small model on the device
# machine, keeping the shipped tokenizer, keepset and evaluation sets (so every token id in
# models/gemma4-tiny/eval/ and the tokenizer tests stay valid). For the run tool:
#
#   bash tools/gpu_retrain.sh "$OUT" [run options...]   (carry .carry/data and .carry/seed)
#
# .carry/seed/work/ holds what the tokenizer stage would have written (gemma4-tiny/tokenizer.json,
# keepset.txt, eval/*.jsonl, logs/tokenizer.json), copied from models/ and docs/small_model/.
# Two calls of tools/train_small_model.py under one overall time limit (GPU_RUN_LIMIT_S; a call
# with less than GPU_RUN_MIN_STAGE_S left is not started):
#   1. --stages target,eval     the target and its window / keepset evidence first (the eval
#                               stage skips acceptance when there is no assistant folder yet),
#                               saved as logs/evidence_target.json;
#   2. --stages assistant,eval  the drafter, then the full evidence (acceptance rows are saved
#                               one by one, so a cut run keeps what it measured).
# With GPU_RETRAIN_VARIANTS=FILE (lines `NAME OPTIONS...`, '#' comments), call 1 is made once per
# variant, all at once on the one GPU (an 8.8M-parameter model leaves most of an H200 idle), each
# with the common options then its own, into variants/NAME/; `train_small_model.py select` picks
# the one whose tune-set perplexity responds most to the window (variants.json says why), its
# folder becomes the work folder, and call 2 trains the drafter against it.
# Whatever exists when the limit strikes is packed like tools/gpu_run.sh does (r.tgz.part-*),
# so tools/install_small_model.sh takes it; the small records are also copied to $OUT as is.
set -u
out=${1:?usage: gpu_retrain.sh OUT_DIR [run options...]}
shift
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=true
limit=${GPU_RUN_LIMIT_S:-330}
min_stage=${GPU_RUN_MIN_STAGE_S:-20} # a stage with less time left than this is not started
end=$(($(date +%s) + limit))
work="$out/work"
mkdir -p "$work"
cp -r .carry/seed/work/. "$work/"

left() { echo $((end - $(date +%s))); }

stage_run() { # stage_run STAGES [options...]: one call, bounded by the time left overall
    local stages=$1 t
    shift
    t=$(left)
    if [ "$t" -lt "$min_stage" ]; then
        echo "gpu_retrain: ${t}s left, stages $stages not started"
        return 1
    fi
    timeout "$t" python3 tools/train_small_model.py run --data .carry/data --work "$work" \
        --stages "$stages" "$@"
    echo "gpu_retrain: stages $stages rc=$?"
}

variants_run() { # the target stage of every variant at once, then the choice of one
    local name opts vdir
    mkdir -p "$out/variants"
    while read -r name opts; do
        case $name in '' | '#'*) continue ;; esac
        vdir="$out/variants/$name"
        mkdir -p "$vdir"
        cp -r .carry/seed/work/. "$vdir/"
        # shellcheck disable=SC2086 # the variant's options are words
        (work=$vdir stage_run target,eval "$@" $opts >"$out/variants/$name.log" 2>&1) &
    done <"$GPU_RETRAIN_VARIANTS"
    wait
    for f in "$out"/variants/*.log; do
        echo "=== variant $(basename "$f" .log)"
        cat "$f"
    done
    name=$(python3 tools/train_small_model.py select --variants "$out/variants" \
        --summary "$out/variants.json") || return 1
    echo "gpu_retrain: variant $name chosen"
    winner_opts=$(awk -v n="$name" '$1 == n { $1 = ""; print }' "$GPU_RETRAIN_VARIANTS")
    rm -rf "$work" && mv "$out/variants/$name" "$work"
}

{
    winner_opts=
    if [ -n "${GPU_RETRAIN_VARIANTS:-}" ]; then
        variants_run "$@"
    else
        stage_run target,eval "$@"
    fi
    [ -f "$work/logs/evidence.json" ] && cp "$work/logs/evidence.json" "$work/logs/evidence_target.json"
    # shellcheck disable=SC2086
    [ -f "$work/gemma4-tiny/model.safetensors" ] && stage_run assistant,eval "$@" $winner_opts
} >"$out/log.txt" 2>&1
cd "$out" || exit 1
rm -rf variants
for f in evidence.json evidence_target.json target_history.json assistant_history.json; do
    [ -f "work/logs/$f" ] && cp "work/logs/$f" .
done
tar czf r.tgz work && rm -rf work && split -b 15m r.tgz r.tgz.part- && rm r.tgz
ls -la
tail -c 9000 log.txt
