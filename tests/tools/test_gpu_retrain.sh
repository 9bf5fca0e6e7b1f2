#!/usr/bin/env bash
# tools/gpu_retrain.sh (the device-side driver of the retrain that keeps the shipped tokenizer)
# without a GPU: python3 is replaced by a stub that plays train_small_model.py's stages, so the
# driver's own logic is what is checked: the seed folder is copied into the work folder, the
# options reach both calls, the drafter is not started without a target, the overall time
# limit stops a stage and keeps the next from starting, and whatever exists is packed for
# tools/install_small_model.sh (r.tgz.part-*, log.txt) with the small records beside it.
set -euo pipefail
: "${ROOT:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
pass() { echo "ok: $1"; }
fail() { echo "FAIL: $1"; fails=$((fails + 1)); }

# The stub: STUB_MODE ok (both stages write their outputs), fail (the target stage fails
# without a model), slow (the target stage writes its model, then outlives the limit).
mkdir -p "$tmp/bin"
# `select` is run by the real python3 (it is what the variants case checks). In the variants
# case, a variant's --dropout D makes its window sweep rise by the factor 1 + D at window 128
# (tune records), and --dropout 0.9 makes it fall (not monotone).
real_python=$(command -v python3)
cat >"$tmp/bin/python3" <<EOF
#!/usr/bin/env bash
[ "\$2" = select ] && exec "$real_python" "\$@"
EOF
cat >>"$tmp/bin/python3" <<'EOF'
echo "stub: $*"
work= dropout=0
while [ $# -gt 0 ]; do
    case $1 in
    --work) work=$2; shift ;;
    --stages) stages=$2; shift ;;
    --dropout) dropout=$2; shift ;;
    esac
    shift
done
case "$STUB_MODE:$stages" in
ok:target,eval)
    echo weights >"$work/gemma4-tiny/model.safetensors"
    echo '{"stage": "target"}' >"$work/logs/evidence.json"
    echo '{"steps": 1}' >"$work/logs/target_history.json" ;;
variants:target,eval)
    echo "weights $dropout" >"$work/gemma4-tiny/model.safetensors"
    r=$(awk -v d="$dropout" 'BEGIN { print (d == 0.9) ? 90 : 100 * (1 + d) }')
    sweep="[{\"window\": 512, \"ppl\": 100}, {\"window\": 256, \"ppl\": 100.5}, {\"window\": 128, \"ppl\": $r}]"
    echo "{\"native_window\": 512, \"ppl_window_tune\": $sweep, \"ppl_window_holdout\": $sweep}" >"$work/logs/evidence.json"
    echo '{"steps": 1, "train": [1, 2]}' >"$work/logs/target_history.json" ;;
variants:assistant,eval)
    mkdir -p "$work/gemma4-tiny-assistant"
    echo weights >"$work/gemma4-tiny-assistant/model.safetensors" ;;
ok:assistant,eval)
    mkdir -p "$work/gemma4-tiny-assistant"
    echo weights >"$work/gemma4-tiny-assistant/model.safetensors"
    echo '{"stage": "all"}' >"$work/logs/evidence.json" ;;
fail:*) exit 1 ;;
slow:target,eval)
    echo weights >"$work/gemma4-tiny/model.safetensors"
    exec sleep 30 ;;
esac
EOF
chmod +x "$tmp/bin/python3"
mkdir -p "$tmp/repo/.carry/seed/work/gemma4-tiny/eval" "$tmp/repo/.carry/seed/work/logs"
echo '{"tok": 1}' >"$tmp/repo/.carry/seed/work/gemma4-tiny/tokenizer.json"
echo '{"prompt_token_ids": [2]}' >"$tmp/repo/.carry/seed/work/gemma4-tiny/eval/prompts_tune.jsonl"
echo '{"vocab_size": 6144}' >"$tmp/repo/.carry/seed/work/logs/tokenizer.json"

mkdir -p "$tmp/repo/tools"
cp -r "$ROOT/tools/train_small_model.py" "$ROOT/tools/smallmodel" "$tmp/repo/tools/"

retrain() { # retrain MODE LIMIT_S [MIN_STAGE_S]: run the driver in the fake repo into $tmp/out-MODE
    local out="$tmp/out-$1"
    rm -rf "$out" && mkdir -p "$out"
    (cd "$tmp/repo" && PATH="$tmp/bin:$PATH" STUB_MODE=$1 GPU_RUN_LIMIT_S=$2 GPU_RUN_MIN_STAGE_S=${3:-20} \
        bash "$ROOT/tools/gpu_retrain.sh" "$out" --lr 1.5e-3 --copy-aug 0.5 >/dev/null 2>&1)
    mkdir -p "$out/x" && cat "$out"/r.tgz.part-* | tar xz -C "$out/x"
}
has() { grep -qF -- "$2" "$1"; }

# 1. Both stages run in order with the options, on top of the seed.
retrain ok 60
o="$tmp/out-ok"
if has "$o/log.txt" "--stages target,eval --lr 1.5e-3 --copy-aug 0.5" &&
    has "$o/log.txt" "--stages assistant,eval --lr 1.5e-3 --copy-aug 0.5" &&
    has "$o/log.txt" "gpu_retrain: stages assistant,eval rc=0"; then
    pass "both stages run with the options"
else
    fail "stages/options: $(cat "$o/log.txt")"
fi
if cmp -s "$o/x/work/gemma4-tiny/tokenizer.json" "$tmp/repo/.carry/seed/work/gemma4-tiny/tokenizer.json" &&
    [ -f "$o/x/work/gemma4-tiny/eval/prompts_tune.jsonl" ] && [ -f "$o/x/work/logs/tokenizer.json" ] &&
    [ -f "$o/x/work/gemma4-tiny/model.safetensors" ] && [ -f "$o/x/work/gemma4-tiny-assistant/model.safetensors" ]; then
    pass "packed work folder holds the seed and both models"
else
    fail "packed work folder: $(cd "$o/x" && find . -type f)"
fi
if has "$o/evidence_target.json" '"target"' && has "$o/evidence.json" '"all"' &&
    [ -f "$o/target_history.json" ] && [ ! -d "$o/work" ]; then
    pass "records beside the parts (target-only evidence kept apart)"
else
    fail "records: $(ls "$o")"
fi

# 2. A failed target stage: no drafter, the log says so, the seed is still packed.
retrain fail 60
o="$tmp/out-fail"
if has "$o/log.txt" "gpu_retrain: stages target,eval rc=1" && ! has "$o/log.txt" "assistant,eval" &&
    [ -f "$o/x/work/gemma4-tiny/tokenizer.json" ]; then
    pass "failed target: drafter not started"
else
    fail "failed target: $(cat "$o/log.txt")"
fi

# 3. The overall limit (3 s) stops the target stage (timeout's 124) and, with less than the
#    minimum (1 s) left, the drafter is not started although the target model exists.
retrain slow 3 1
o="$tmp/out-slow"
if has "$o/log.txt" "gpu_retrain: stages target,eval rc=124" &&
    has "$o/log.txt" "stages assistant,eval not started" && ! has "$o/log.txt" "stub: tools/train_small_model.py run --data .carry/data --work $o/work --stages assistant"; then
    pass "time limit stops the run"
else
    fail "time limit: $(cat "$o/log.txt")"
fi

# 4. Variants: all trained (the common options, then their own), the largest monotone tune
#    response chosen (b: 1.3; c falls at 128, so it is not monotone); its model becomes the
#    work folder and the drafter is trained with its options.
printf '%s\n' '# name options' 'a --dropout 0.1' 'b --dropout 0.3' 'c --dropout 0.9' >"$tmp/variants.txt"
GPU_RETRAIN_VARIANTS="$tmp/variants.txt" retrain variants 60
o="$tmp/out-variants"
if has "$o/log.txt" "gpu_retrain: variant b chosen" &&
    has "$o/log.txt" "--stages assistant,eval --lr 1.5e-3 --copy-aug 0.5 --dropout 0.3" &&
    has "$o/x/work/gemma4-tiny/model.safetensors" "weights 0.3" &&
    [ -f "$o/x/work/gemma4-tiny-assistant/model.safetensors" ] && [ ! -d "$o/variants" ]; then
    pass "variants: b chosen, its model packed with a drafter"
else
    fail "variants: $(cat "$o/log.txt")"
fi
if python3 - "$o/variants.json" <<'PY'; then
import json, sys
s = json.load(open(sys.argv[1]))
v = s["variants"]
assert s["chosen"] == "b", s["chosen"]
assert sorted(v) == ["a", "b", "c"], sorted(v)
assert v["b"]["tune_ratio_128"] == 1.3 and v["b"]["tune_monotone"] is True, v["b"]
assert v["c"]["tune_monotone"] is False, v["c"]
assert "train" not in v["a"]["target_history"], v["a"]
PY
    pass "variants.json records every variant and the choice"
else
    fail "variants.json: $(cat "$o/variants.json")"
fi

echo "$((7 - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
