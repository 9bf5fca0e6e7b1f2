#!/usr/bin/env bash
# bench_spec_gpu.sh: speculative decoding on the GPU - the shipped small model
# (models/gemma4-tiny) with its trained assistant (models/gemma4-tiny-assistant) at
# NUM_SPECULATIVE_TOKENS k = 0..8 on the CUDA backend. Each run rewrites its page,
# docs/bench/bench_spec_gpu.md, whole: the GPU, the build, the exact command and the figures.
# For a machine with an NVIDIA GPU.
#
# Table 1: per k, tps, decode tps, mean accepted drafts, tokens per verify pass, the cost of one
# verify pass and one draft step, and the shares of decode time in draft / verify / other, with
# every run's output_hash (equal hashes across k = the lossless rule, measured). Table 2: the
# per-kernel-family profile of one speculative run at the best k (GEMMA_CUDA_PROFILE=1: every op
# timed, graphs off, so it shows where the time goes, not the graph run's speed).
#
#   bench/bench_spec_gpu.sh                  build into build-bench-gpu, then measure
#   GPU_BIN_DIR=DIR bench/bench_spec_gpu.sh  use a prebuilt DIR/engine
#
# Environment: NEW_TOKENS (default 512), PROMPTS (first N prompts of prompts_tune.jsonl, default
# 16), REPEATS (runs per k, the best decode tps kept, default 2), WARMUP (default 2), OUT (default
# docs/bench/bench_spec_gpu.md), LOG_DIR (raw results kept there when set), GIT_REV (the commit to name
# when the tree has no .git, as on a machine the tree was copied to).
set -euo pipefail
cd "$(dirname "$0")/.."
new_tokens=${NEW_TOKENS:-512}
n_prompts=${PROMPTS:-16}
repeats=${REPEATS:-2}
warmup=${WARMUP:-2}
out=${OUT:-docs/bench/bench_spec_gpu.md}
model=models/gemma4-tiny
command_line="bench/bench_spec_gpu.sh${*:+ $*}"
# The engine's own switches (GEMMA_CUDA_MV_MMA=1, ...) change what is measured: named too.
for v in GPU_BIN_DIR NEW_TOKENS PROMPTS REPEATS WARMUP $(compgen -e | grep '^GEMMA_' | sort); do
    if [ -n "${!v:-}" ]; then command_line="$v=${!v} $command_line"; fi
done
[ -d "$model" ] && [ -d "$model-assistant" ] || {
    echo "bench_spec_gpu.sh: needs $model and $model-assistant" >&2
    exit 1
}
if [ -n "${GPU_BIN_DIR:-}" ]; then
    engine=$GPU_BIN_DIR/engine
else
    ./scripts/build.sh build-bench-gpu -DWITH_CUDA=ON >&2
    engine=build-bench-gpu/engine/engine
fi
[ -x "$engine" ] || { echo "bench_spec_gpu.sh: $engine is missing" >&2; exit 1; }
gpu=$(nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader 2>/dev/null | head -n 1) ||
    { echo "bench_spec_gpu.sh: no NVIDIA GPU here" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
head -n "$n_prompts" "$model/eval/prompts_tune.jsonl" >"$tmp/prompts.jsonl"

# run NAME ENV...: engine bench on the GPU REPEATS times, the best decode tps kept in $tmp/NAME.json
run() {
    local name=$1 i
    shift
    for i in $(seq "$repeats"); do
        echo "== $name ($i/$repeats): $*" >&2
        env "$@" ENGINE_DEVICE=cuda MAX_NEW_TOKENS="$new_tokens" WARMUP_NUM_PROMPTS="$warmup" \
            "$engine" bench "$model" --prompts "$tmp/prompts.jsonl" \
            2>"$tmp/$name.$i.err" | tail -n 1 >"$tmp/$name.$i.json"
    done
    python3 bench/spec_report.py best-of "$tmp" "$name" "$repeats"
}
for k in 0 1 2 3 4 5 6 7 8; do run "k$k" NUM_SPECULATIVE_TOKENS=$k; done
best=$(python3 bench/spec_report.py best-k "$tmp")
echo "== profile at k=$best" >&2
GEMMA_CUDA_PROFILE=1 ENGINE_DEVICE=cuda NUM_SPECULATIVE_TOKENS=$best MAX_NEW_TOKENS=128 \
    WARMUP_NUM_PROMPTS=0 "$engine" bench "$model" --prompts "$tmp/prompts.jsonl" \
    2>"$tmp/profile.err" | tail -n 1 >"$tmp/profile.json"
if [ -n "${LOG_DIR:-}" ]; then
    mkdir -p "$LOG_DIR"
    cp "$tmp"/*.json "$tmp"/*.err "$LOG_DIR"/
fi

python3 - "$tmp" "$out" "$best" <<EOF
import json, os, sys
sys.path.insert(0, "bench")
from spec_report import k_table, step_seconds
tmp, out, best = sys.argv[1], sys.argv[2], int(sys.argv[3])
J = lambda n: json.load(open(f"{tmp}/{n}.json"))
L = []
w = L.append
base = J("k0")
w("# Speculative decoding on the GPU (gemma4-tiny with its assistant)\n")
w("Produced by \`$command_line\` on $(date -u +%Y-%m-%d) (git ${GIT_REV:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}).")
w(f"GPU: $gpu; engine device: {base.get('device', '?')}.")
w("Protocol: \`ENGINE_DEVICE=cuda engine bench models/gemma4-tiny\` on the first $n_prompts prompts "
  "of prompts_tune.jsonl (600-980 tokens each), $new_tokens new tokens each, $warmup warm-up "
  "prompt(s), the best of $repeats run(s) per k; tps = completion tokens / wall time (prefill "
  "included), decode tps = tokens after the first / decode time. Drafter: "
  "models/gemma4-tiny-assistant (centroid-masked head, its default CENTROID_TOP_K), its head and "
  "its k-step draft loop on the device as one CUDA graph (kernels/draft_head.cu, "
  "engine/assistant.c drafter_draft).\n")
w("## 1. tps against NUM_SPECULATIVE_TOKENS\n")
rows, hashes = k_table(J, 3)
L.extend(rows)
step0 = step_seconds(base)
w(f"\n{len(hashes) == 1 and 'All nine runs served identical tokens (one output_hash): lossless on the GPU.' or 'RUNS DIFFER: ' + str(hashes)} "
  "k = 0 is plain greedy decoding (bench.c, CUDA graphs per decode step). Shares are of decode "
  "time (prefill excluded): draft = the drafter's k steps including the one download of the k "
  "tokens, verify = the target's pass over k+1 positions plus its head (matmul_argmax: one "
  "argmax launch pair and one host synchronisation for all k+1 rows), other = acceptance, "
  "rollback and bookkeeping. Verify ms is "
  "one verify pass (at k = 0 one decode step); draft ms is one drafter step.\n")
w(f"## 2. Where the time goes at k = {best} (profiled: every op timed, graphs off)\n")
w("\`\`\`")
prof = [l.rstrip() for l in open(f"{tmp}/profile.err") if l.startswith("cuda profile") or l.startswith("  ")]
L.extend(prof)
w("\`\`\`\n")
b = J(f"k{best}")
sh = b["decode_time_share"]
ver_best = sh["verify"] * b["decode_s"] / b["speculation"]["steps"]
w("## Reading the figures\n")
w(f"At the best k = {best}, decode runs at {b['decode_tps']:.0f} tokens/s against "
  f"{base['decode_tps']:.0f} at k = 0 ({b['decode_tps'] / base['decode_tps']:.2f}x), with "
  f"{b['tokens_per_step']:.2f} tokens per verify pass; one verify pass over {best + 1} positions "
  f"costs {ver_best / step0:.2f} decode steps and the drafter takes {sh['draft']:.1%} of decode "
  "time. A speculative step pays when its tokens per verify pass exceed the cost of the verify "
  "pass plus its k draft steps, counted in plain decode steps.\n")
os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
open(out, "w").write("\n".join(L) + "\n")
EOF
echo "wrote $out" >&2
