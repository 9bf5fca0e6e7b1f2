#!/usr/bin/env bash
# The shipped small model (models/gemma4-tiny*) follows the project's formats, its model card
# is the one tools/write_model_card.py makes from the recorded evidence, and every kind of
# damage tools/check_small_model.py looks for is reported with the file (and line) and exit 1.
set -euo pipefail
: "${ROOT:?}"
command -v python3 >/dev/null || { echo "FAIL: python3 not found (scripts/setup.sh installs it)"; exit 1; }
check="python3 $ROOT/tools/check_small_model.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
pass() { echo "ok: $1"; }
fail() { echo "FAIL: $1"; fails=$((fails + 1)); }

# 1. The shipped folders pass.
if out=$($check "$ROOT/models/gemma4-tiny" "$ROOT/models/gemma4-tiny-assistant" 2>&1); then
    pass "shipped model: $out"
else
    fail "shipped model: $out"
fi

# 2. The card is exactly what the evidence gives.
python3 "$ROOT/tools/write_model_card.py" --out "$tmp/README.md" >/dev/null
if cmp -s "$tmp/README.md" "$ROOT/models/gemma4-tiny/README.md"; then
    pass "model card matches docs/small_model/*.json"
else
    fail "model card differs from what tools/write_model_card.py writes"
fi

# 2b. A damaged record of the retrain the card reports (docs/small_model/retrain_copyaug/) is
#     refused with its path, not written into the card.
cp -r "$ROOT/docs/small_model" "$tmp/logs"
chmod -R u+w "$tmp/logs"
echo '{"native_window": 512,' >"$tmp/logs/retrain_copyaug/evidence.json"
rc=0
err=$(python3 "$ROOT/tools/write_model_card.py" --logs "$tmp/logs" --out "$tmp/bad.md" 2>&1) || rc=$?
if [ "$rc" -eq 1 ] && grep -qF "retrain_copyaug/evidence.json: not JSON" <<<"$err" && [ ! -e "$tmp/bad.md" ]; then
    pass "damaged retrain record refused"
else
    fail "damaged retrain record: rc=$rc: $err"
fi

# 3. Damaged copies: each must fail with the expected message.
damaged() {  # name, python snippet editing $T (target) / $A (assistant), expected stderr text
    local name=$1 edit=$2 want=$3
    rm -rf "$tmp/t" "$tmp/a"
    cp -r "$ROOT/models/gemma4-tiny" "$tmp/t"
    cp -r "$ROOT/models/gemma4-tiny-assistant" "$tmp/a"
    T="$tmp/t" A="$tmp/a" python3 -c "import os; T=os.environ['T']; A=os.environ['A']
$edit"
    local rc=0 err
    err=$($check "$tmp/t" "$tmp/a" 2>&1 >/dev/null) || rc=$?
    if [ "$rc" -eq 1 ] && grep -qF -- "$want" <<<"$err"; then
        pass "$name"
    else
        fail "$name: rc=$rc, wanted '$want' in: $err"
    fi
}
damaged "prompt line not JSON" "
p=T+'/eval/prompts_tune.jsonl'; L=open(p).read().split('\n'); L[2]='{not json'; open(p,'w').write('\n'.join(L))" \
    "prompts_tune.jsonl:3: not JSON"
damaged "prompt without <bos>" "
import json; p=T+'/eval/prompts_holdout.jsonl'; L=open(p).read().split('\n'); r=json.loads(L[0]); r['prompt_token_ids'][0]=5; L[0]=json.dumps(r); open(p,'w').write('\n'.join(L))" \
    "prompts_holdout.jsonl:1: prompt_token_ids must start with <bos>"
damaged "record id outside the vocabulary" "
import json; p=T+'/eval/ppl_tune.jsonl'; L=open(p).read().split('\n'); r=json.loads(L[4]); r['target_token_ids'][3]=99999; L[4]=json.dumps(r); open(p,'w').write('\n'.join(L))" \
    "ppl_tune.jsonl:5: target_token_ids holds a value that is not a token id below 6144"
damaged "keepset id repeated" "
p=T+'/keepset.txt'; L=open(p).read().split('\n'); L[10]=L[11]; open(p,'w').write('\n'.join(L))" \
    "keepset.txt:12: id"
damaged "wrong model_type" "
import json; p=T+'/config.json'; c=json.load(open(p)); c['model_type']='llama'; json.dump(c,open(p,'w'))" \
    "config.json: model_type 'llama', expected 'gemma4_text'"
damaged "config missing a key" "
import json; p=T+'/config.json'; c=json.load(open(p)); del c['sliding_window']; json.dump(c,open(p,'w'))" \
    "config.json: key 'sliding_window' missing"
damaged "tokenizer without byte tokens" "
import json; p=T+'/tokenizer.json'; t=json.load(open(p)); v=t['model']['vocab']; i=v.pop('<0x41>'); v['<zz>']=i; json.dump(t,open(p,'w'))" \
    "byte tokens missing (first <0x41>)"
damaged "token_ordering not a permutation" "
import json, struct; p=A+'/model.safetensors'; b=bytearray(open(p,'rb').read()); n=struct.unpack('<Q',b[:8])[0]; h=json.loads(b[8:8+n]); s=h['masked_embedding.token_ordering']['data_offsets'][0]+8+n; b[s:s+8]=b[s+8:s+16]; open(p,'wb').write(b)" \
    "token_ordering is not a permutation"
damaged "drafter head_dim differs" "
import json; p=A+'/config.json'; c=json.load(open(p)); c['text_config']['head_dim']=16; json.dump(c,open(p,'w'))" \
    "sliding_attention head_dim 16 differs from the target's 32"
damaged "truncated safetensors header" "
p=T+'/model.safetensors'; open(p,'wb').write(b'\x10\x00')" \
    "model.safetensors: shorter than the 8-byte header length"
damaged "over the size limit" "
open(T+'/padding.bin','wb').write(bytes(1_000_000))" \
    "over 25000000"

echo "$((14 - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
