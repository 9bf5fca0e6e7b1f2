#!/usr/bin/env bash
# test_quantize_checkpoint.sh: tools/quantize_checkpoint.py (numpy) against engine/quant.c.
#
# The tool writes compressed-tensors pack-quantized checkpoints of the shipped small model
# (models/gemma4-tiny) for int4 group 32 and int8 group 128, and of a synthetic layer built to
# hit every corner of the rule (ties at .5 both ways, all-zero groups, a negative extreme, a
# positive one, equal magnitudes of both signs, values that underflow, bf16 subnormals) for
# all six bits x group pairs. $BUILD_DIR/quant_ckpt_check then reads each through
# engine/ctensors.c and requires every layer to equal quant_from_bf16 of the original weights
# bit for bit (values and scales), every other tensor to be unchanged, and the config to pass;
# $BUILD_DIR/quant_logits_check then requires the engine's logits from each tiny checkpoint to
# equal those of the bf16 folder loaded with WEIGHT_DTYPE / WEIGHT_GROUP set, bit for bit, and
# knobs that disagree with the checkpoint to be refused.
# Last, a checkpoint with one packed byte flipped must be caught, and bad arguments refused.
#
# Needs python3 with numpy (Debian: python3-numpy); without it the test FAILS.
set -euo pipefail
: "${TESTS_DIR:?set by ctest}" "${BUILD_DIR:?set by ctest}" "${ROOT:?set by ctest}"

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

CHECK="$BUILD_DIR/quant_ckpt_check"
LOGITS="$BUILD_DIR/quant_logits_check"
TOOL="$ROOT/tools/quantize_checkpoint.py"
MODEL="$ROOT/models/gemma4-tiny"
[ -x "$CHECK" ] || fail "$CHECK is not built (cmake --build ... --target quant_ckpt_check)"
[ -x "$LOGITS" ] || fail "$LOGITS is not built (cmake --build ... --target quant_logits_check)"
[ -f "$MODEL/model.safetensors" ] || fail "$MODEL/model.safetensors is missing"
PY=""
for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null && "$p" -c 'import numpy' 2>/dev/null; then
        PY="$p"
        break
    fi
done
[ -n "$PY" ] || fail "no python3 with numpy (install the Debian package python3-numpy)"

tmp=$(mktemp -d /tmp/test_quantize_checkpoint.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# The shipped model.
for spec in "4 32" "8 128"; do
    set -- $spec
    ckpt="$tmp/tiny_int$1_g$2"
    "$PY" "$TOOL" "$MODEL" "$ckpt" --bits "$1" --group "$2" || fail "the tool failed on $MODEL"
    "$CHECK" "$MODEL" "$ckpt" "$1" "$2" || fail "int$1 group $2 of $MODEL differs from quant.c"
    "$LOGITS" "$MODEL" "$ckpt" "$1" "$2" ||
        fail "the engine's logits from the int$1 group $2 checkpoint differ from WEIGHT_DTYPE at load"
    [ -f "$ckpt/tokenizer.json" ] && [ -f "$ckpt/generation_config.json" ] ||
        fail "the tool did not copy the model's other files"
done

# The synthetic corners: one q_proj [16, 256] plus an embedding, as a bf16 folder.
syn="$tmp/synthetic"
mkdir -p "$syn"
"$PY" - "$TOOL" "$syn" <<'EOF'
import importlib.util, json, sys
import numpy as np
spec = importlib.util.spec_from_file_location("qc", sys.argv[1])
qc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(qc)
rng = np.random.default_rng(7)
rows, cols = 16, 256
w = (rng.standard_normal((rows, cols)) * 0.05).astype(np.float32)
k = np.arange(cols)
w[0] = np.where(k % 2, 1.0, -1.0) * (k % 16) / 16.0  # exact grid points and ties, both signs
w[0, 0] = 1.0                                        # positive extreme first
w[1] = -(k % 16) * 0.0625 - 0.03125                  # ties (odd multiples of half a step)
w[1, 64:] = 0.0                                      # all-zero groups of every size
w[2] = np.where(k % 2, -0.75, 0.75)                  # equal magnitudes, both signs
w[3, :] = 1e-39                                      # bf16 subnormals
w[3, ::2] = -2e-39
w[4, :] = 2e-40; w[4, 1::4] = -1e-40                 # scales that underflow bf16
w[5] = np.linspace(-1, 1, cols)                      # a ramp
w[6] = rng.standard_normal(cols) * 1e4               # large values
w[7, ::32] = 3.0                                     # one spike per group
bits = qc.f32_to_bf16_bits(w)                        # the folder stores bf16
emb = qc.f32_to_bf16_bits(rng.standard_normal((8, 256)).astype(np.float32))
items = [
    ("model.layers.0.self_attn.q_proj.weight", "BF16", [rows, cols], bits.nbytes,
     lambda: bits.astype("<u2").tobytes()),
    ("model.embed_tokens.weight", "BF16", [8, 256], emb.nbytes,
     lambda: emb.astype("<u2").tobytes()),
]
qc.write_safetensors(sys.argv[2] + "/model.safetensors", items)
json.dump({"model_type": "gemma4_text"}, open(sys.argv[2] + "/config.json", "w"))
EOF
for b in 4 8; do
    for g in 32 64 128; do
        ckpt="$tmp/syn_int${b}_g$g"
        "$PY" "$TOOL" "$syn" "$ckpt" --bits "$b" --group "$g" >/dev/null ||
            fail "the tool failed on the synthetic layer"
        "$CHECK" "$syn" "$ckpt" "$b" "$g" || fail "int$b group $g of the synthetic layer differs"
    done
done

# A flipped byte in a packed layer must be caught.
bad="$tmp/flipped"
cp -r "$tmp/syn_int4_g32" "$bad"
"$PY" - "$bad/model.safetensors" <<'EOF'
import json, struct, sys
path = sys.argv[1]
with open(path, "r+b") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    h = json.loads(f.read(n))
    b, e = h["model.layers.0.self_attn.q_proj.weight_packed"]["data_offsets"]
    f.seek(8 + n + b + 77)
    x = f.read(1)
    f.seek(8 + n + b + 77)
    f.write(bytes([x[0] ^ 0x10]))
EOF
if "$CHECK" "$syn" "$bad" 4 32 2>"$tmp/err"; then
    fail "a flipped packed byte went unnoticed"
fi
grep -q "value bytes and 0 scales differ" "$tmp/err" || fail "unexpected message: $(cat "$tmp/err")"

# Refusals: a bad group, a non-empty destination, an already quantized source.
if "$PY" "$TOOL" "$syn" "$tmp/x" --bits 4 --group 48 2>/dev/null; then fail "--group 48 accepted"; fi
if "$PY" "$TOOL" "$syn" "$tmp/x" --bits 3 --group 32 2>/dev/null; then fail "--bits 3 accepted"; fi
if "$PY" "$TOOL" "$syn" "$syn" --bits 4 --group 32 2>/dev/null; then fail "SRC == DST accepted"; fi
if "$PY" "$TOOL" "$syn" "$tmp/syn_int8_g32" --bits 4 --group 32 2>/dev/null; then
    fail "a non-empty destination accepted"
fi
if "$PY" "$TOOL" "$tmp/syn_int8_g32" "$tmp/y" --bits 4 --group 32 2>/dev/null; then
    fail "an already quantized source accepted"
fi
echo "test_quantize_checkpoint: all passed"
