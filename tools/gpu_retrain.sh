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

{
    stage_run target,eval "$@"
    [ -f "$work/logs/evidence.json" ] && cp "$work/logs/evidence.json" "$work/logs/evidence_target.json"
    [ -f "$work/gemma4-tiny/model.safetensors" ] && stage_run assistant,eval "$@"
} >"$out/log.txt" 2>&1
cd "$out" || exit 1
for f in evidence.json evidence_target.json target_history.json assistant_history.json; do
    [ -f "work/logs/$f" ] && cp "work/logs/$f" .
done
tar czf r.tgz work && rm -rf work && split -b 15m r.tgz r.tgz.part- && rm r.tgz
ls -la
tail -c 9000 log.txt
