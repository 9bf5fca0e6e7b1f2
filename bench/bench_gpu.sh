#!/usr/bin/env bash
# bench_gpu.sh: the GPU benchmark, for a machine with an NVIDIA GPU, PyTorch and transformers
# (nothing is downloaded). In one run:
#   - the device's measured copy bandwidth (decode_profile copy-bw);
#   - one matrix product at a time on E4B's shapes, on our kernels and by the default
#     (decode_profile matmul), and the matrix-vector kernels on the CUDA cores and the tensor
#     cores, in CUDA graphs (decode_profile matvec);
#   (a) the shipped small model models/gemma4-tiny (when it is there): `engine bench` on its
#       eval prompts, and the decode-step profile;
#   (b) a model with google/gemma-4-E4B's dimensions and random bf16 weights, built with
#       transformers on the GPU (tools/make_e4b_random.py, saved to local disk), 256-token
#       prompts, 512 new tokens: `engine bench` (batch 1, no speculation; and again with
#       MAX_MODEL_LEN=4096, the challenge record's setting), bytes read per
#       token, the floor (bandwidth / bytes per token) and our share of it, transformers' own
#       decode speed on the same model, and the step time split by kernel family (CUDA events,
#       graphs off) and, where ncu exists, one replayed step kernel by kernel (ncu);
#   for both models, what a speculative verify pass over 2 .. 8 positions costs in decode steps,
#   with the products on the CUDA cores (default) and on the tensor cores (GEMMA_CUDA_MV_MMA=1:
#   x split exactly; =2: x to 16 bits), and with the tensor cores taking the MLP too
#   (GEMMA_CUDA_MV_MMA=1 GEMMA_CUDA_MLP=0: the whole-MLP kernel's arithmetic is the CUDA cores'),
#   with the whole-MLP kernel on the tensor cores (GEMMA_CUDA_MLP=mma), and with both.
# Results: docs/bench/bench_gpu.md, rewritten whole by each run (the machine, the command, the
# figures), and the raw logs in RESULTS_DIR.
#
#   bench/bench_gpu.sh [RESULTS_DIR]      (default build-gpu/bench)
#   GPU_BIN_DIR=DIR: use prebuilt DIR/engine and DIR/decode_profile instead of building
#   WORK_DIR=DIR: where the random E4B model is written (default /tmp/e4b-random, ~15 GB)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RES=${1:-$ROOT/build-gpu/bench}
WORK=${WORK_DIR:-/tmp/e4b-random}
mkdir -p "$RES" "$WORK"
RES=$(cd "$RES" && pwd)

source bench/gpu_bins.sh
COMMAND="bench/bench_gpu.sh" # the results folder, its only argument, is no part of the figures

nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem --format=csv | tee "$RES/gpu.txt"

echo "=== copy bandwidth"
"$PROFILE" copy-bw | tee "$RES/copy_bw.txt"

echo "=== matrix products: our kernels alone against the default"
"$PROFILE" matmul | tee "$RES/matmul_raw.txt"
grep '^|' "$RES/matmul_raw.txt" >"$RES/matmul.md"
echo "=== matrix-vector kernels: CUDA cores against tensor cores"
"$PROFILE" matvec | tee "$RES/matvec_variants_raw.txt"
grep '^|' "$RES/matvec_variants_raw.txt" >"$RES/matvec_variants.md"

# What a verify pass over 2 .. 8 positions costs, six ways (the report's run names):
# decode_profile MODEL PROMPT STEPS with the CUDA cores, the tensor cores' two splits, the
# tensor cores (x exact) with the MLP as their products too, the whole-MLP kernel on the tensor
# cores (mlp_mma.cu), and that with the products on the tensor cores too.
verify_costs() {
  DECODE_PROFILE_VERIFY="2 3 4 5 6 8" \
    DECODE_PROFILE_CUSTOM="cuda_cores:;tensor_cores:GEMMA_CUDA_MV_MMA=1;tensor_cores_16:GEMMA_CUDA_MV_MMA=2;tensor_cores_mlp:GEMMA_CUDA_MV_MMA=1 GEMMA_CUDA_MLP=0;mlp_mma:GEMMA_CUDA_MLP=mma;all_mma:GEMMA_CUDA_MV_MMA=1 GEMMA_CUDA_MLP=mma" \
    "$PROFILE" "$@"
}

# (a) the small model
TINY=models/gemma4-tiny
if [[ -f $TINY/config.json && -f $TINY/eval/prompts_tune.jsonl ]]; then
  echo "=== (a) small model"
  # A failure here is reported and (b) still runs.
  if ENGINE_DEVICE=cuda WARMUP_NUM_PROMPTS=1 "$ENGINE" bench "$TINY" --data "$TINY/eval" \
    >"$RES/tiny_bench.out" 2>"$RES/tiny_bench.err"; then
    tail -n 1 "$RES/tiny_bench.out"
    "$PROFILE" "$TINY" 256 512 | tee "$RES/tiny_profile.txt" || echo "bench_gpu: (a) profile FAILED"
    verify_costs "$TINY" 256 512 | tee "$RES/tiny_verify.txt" || echo "bench_gpu: (a) verify FAILED"
  else
    tail -n 5 "$RES/tiny_bench.err"; echo "bench_gpu: (a) engine bench FAILED"; rm -f "$RES/tiny_bench.out"
  fi
fi

# (b) E4B dimensions, random weights
echo "=== (b) E4B-sized random model: build with transformers"
if [[ ! -f $WORK/model/config.json ]]; then
  PYTHONUNBUFFERED=1 python3 tools/make_e4b_random.py "$WORK" --prompts 2 --prompt-len 256 \
    --hf-new-tokens 32 2>&1 | tee "$RES/e4b_make.log"
fi
cp "$WORK/hf.json" "$RES/e4b_hf.json"
echo "=== (b) engine bench: 2 prompts x (256 + 512 tokens), 1 warm-up"
ENGINE_DEVICE=cuda WARMUP_NUM_PROMPTS=1 MAX_NEW_TOKENS=512 "$ENGINE" bench "$WORK/model" \
  --prompts "$WORK/prompts.jsonl" >"$RES/e4b_bench.out" 2>"$RES/e4b_bench.err"
tail -n 1 "$RES/e4b_bench.out"
echo "=== (b) the same with MAX_MODEL_LEN=4096 (the challenge record's setting)"
ENGINE_DEVICE=cuda WARMUP_NUM_PROMPTS=1 MAX_NEW_TOKENS=512 MAX_MODEL_LEN=4096 "$ENGINE" bench \
  "$WORK/model" --prompts "$WORK/prompts.jsonl" >"$RES/e4b_bench_4096.out" 2>"$RES/e4b_bench_4096.err"
tail -n 1 "$RES/e4b_bench_4096.out"
echo "=== (b) decode-step profile"
"$PROFILE" "$WORK/model" 256 128 | tee "$RES/e4b_profile.txt"
echo "=== (b) speculative verify passes: CUDA cores against tensor cores (x exact, x to 16 bits, x exact with the MLP)"
verify_costs "$WORK/model" 256 128 | tee "$RES/e4b_verify.txt"
# Where ncu exists: one replayed decode step, every kernel timed on its own (caches warm, clocks
# left alone), split by role (bench/ncu_step_split.py). A failure here costs the report this
# table only.
rm -f "$RES/e4b_ncu_split.md"
if command -v ncu >/dev/null; then
  echo "=== (b) one decode step kernel by kernel (ncu)"
  if DECODE_PROFILE_CUSTOM="ncu:" DECODE_PROFILE_NCU=1 ncu --profile-from-start off \
      --graph-profiling node --cache-control none --clock-control none \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv \
      "$PROFILE" "$WORK/model" 256 1 >"$RES/e4b_ncu.csv" 2>"$RES/e4b_ncu.err" &&
    python3 bench/ncu_step_split.py "$RES/e4b_ncu.csv" >"$RES/e4b_ncu_split.md"; then
    cat "$RES/e4b_ncu_split.md"
  else
    rm -f "$RES/e4b_ncu_split.md"
    echo "bench_gpu: the ncu split FAILED (see $RES/e4b_ncu.err); the report goes on without it"
  fi
fi

python3 - "$RES" "$ROOT/docs/bench/bench_gpu.md" "$COMMAND" <<'PY'
import json, os, socket, sys
res, page, command = sys.argv[1:4]
rd = lambda f: open(os.path.join(res, f)).read()
last_json = lambda f: json.loads(rd(f).strip().splitlines()[-1])
bw = float(rd("copy_bw.txt").split()[-1])
gpu = rd("gpu.txt").strip().splitlines()[-1]
out = ["# GPU benchmark", "",
       f"Written whole by `{command.strip()}` (bench/bench_gpu.sh's header says what it runs); the raw logs "
       f"stay in its results folder.", "",
       f"Machine: {socket.gethostname()}, GPU {gpu}.", "",
       "Engine switches in the environment of the whole run: " +
       (", ".join(f"`{k}={v}`" for k, v in sorted(os.environ.items()) if k.startswith("GEMMA_")) or "none (the defaults)") + ".", "",
       f"Measured device copy bandwidth (device-to-device copy of 2 GiB, bytes read + written per second): **{bw:.0f} GB/s**.",
       "The floor of a decode step is bytes read per token / this bandwidth.", ""]

def profile(f):
    runs, table = {}, []
    for line in rd(f).splitlines():
        if line.startswith("{"):
            j = json.loads(line); runs[j["run"]] = j
        elif line.startswith("  ") or line.startswith("cuda profile"):
            table.append(line)
    return runs, table

def model_section(title, bench_file, prof_file, hf=None):
    b = last_json(bench_file)
    b4f = bench_file.replace(".out", "_4096.out")
    b4 = last_json(b4f) if os.path.exists(os.path.join(res, b4f)) else None
    runs, table = profile(prof_file)
    g = runs["graphs"]
    bpt = b["bytes_per_token"]
    floor = bw * 1e9 / bpt
    out.extend([f"## {title}", "",
        "| figure | value |", "|---|---|",
        f"| engine tps (batch 1, no speculation; prefill and overhead included) | {b['tps']:.1f} |",
        f"| engine decode tps | {b['decode_tps']:.1f} |",
        f"| engine prefill tps | {b['prefill_tps']:.1f} |",
        f"| prompts x new tokens | {b['prompts']} x {b['tokens'] // max(b['prompts'], 1)} |",
        f"| weight bytes read per token (model_bytes_per_token) | {bpt / 1e9:.3f} GB |",
        f"| all bytes one decode step moves (backend counters: weights, KV, activations) | {g['bytes_per_step'] / 1e9:.3f} GB |",
        f"| floor = copy bandwidth / weight bytes per token | {floor:.1f} tokens/s |",
        f"| our decode share of the floor | {100 * b['decode_tps'] / floor:.1f} % |"] + (
        [f"| engine decode tps with MAX_MODEL_LEN=4096 (the record's setting: a longer cache; the attention's form follows each request's length) | {b4['decode_tps']:.1f} ({100 * b4['decode_tps'] / floor:.1f} % of floor) |"]
        if b4 else []) + [
        f"| decode step, CUDA graphs (decode_profile, {g['steps']} steps after a 256-token prompt) | {g['ms_per_step']:.3f} ms ({g['decode_tps']:.1f} tokens/s, {100 * g['decode_tps'] / floor:.1f} % of floor) |",
        f"| same, graphs without programmatic dependent launch | {runs['graphs_no_pdl']['ms_per_step']:.3f} ms ({runs['graphs_no_pdl']['decode_tps']:.1f} tokens/s) |",
        f"| same, graphs without fusion of neighbouring ops | {runs['graphs_no_fusion']['ms_per_step']:.3f} ms ({runs['graphs_no_fusion']['decode_tps']:.1f} tokens/s) |"] +
        [f"| same, {what} | {runs[k]['ms_per_step']:.3f} ms ({runs[k]['decode_tps']:.1f} tokens/s) |"
         for k, what in [("graphs_no_mlp_kernel", "the MLP as grouped products, not one kernel (GEMMA_CUDA_MLP=0)"),
                         ("graphs_attn_split", "attention as a slices kernel and a merge kernel (GEMMA_CUDA_ATTN=split: the form before sm_90)"),
                         ("graphs_again", "default settings again (run-to-run spread)")] if k in runs] + [
        f"| decode step, eager launches (no graphs) | {runs['eager']['ms_per_step']:.3f} ms ({runs['eager']['decode_tps']:.1f} tokens/s) |"])
    if hf:
        out.append(f"| transformers {hf['transformers']} decode tps, same model and GPU ({hf['attn_implementation']}, {hf['new_tokens']} new tokens after {hf['prompt_tokens']}: prefill excluded) | {hf['decode_tps']:.1f} |")
        out.append(f"| our decode speed / transformers' | {b['decode_tps'] / hf['decode_tps']:.1f}x |")
    vf = prof_file.replace("_profile.txt", "_verify.txt")
    if os.path.exists(os.path.join(res, vf)):
        steps, verify = {}, {}
        for line in rd(vf).splitlines():
            if line.startswith("{"):
                j = json.loads(line)
                if "ms_per_step" in j: steps[j["run"]] = j["ms_per_step"]
                else: verify.setdefault(j["run"], {})[j["verify_rows"]] = j["ms_per_verify"]
        ns = sorted(next(iter(verify.values()), {}))
        out.extend(["", "What a speculative verify pass costs (decode_profile with DECODE_PROFILE_VERIFY: graph-captured "
                    "passes over n positions, ms, and in decode steps of the CUDA-core default); GEMMA_CUDA_MV_MMA=1 puts "
                    "every bf16 product on the tensor cores (kernels/matvec_mma.cu), decode and verify alike, with x split "
                    "exactly into three bf16; =2 splits it into two (x to 16 bits); with GEMMA_CUDA_MLP=0 the MLP "
                    "is theirs too (the whole-MLP kernel, the default on sm_90, computes on the CUDA cores); "
                    "GEMMA_CUDA_MLP=mma puts the whole-MLP kernel on the tensor cores (kernels/mlp_mma.cu):", "",
                    "| products | decode step | " + " | ".join(f"verify n = {n}" for n in ns) + " |",
                    "|---|---|" + "---|" * len(ns)])
        base = steps.get("cuda_cores")
        for run, what in [("cuda_cores", "CUDA cores (default)"), ("tensor_cores", "tensor cores, x exact (GEMMA_CUDA_MV_MMA=1)"),
                          ("tensor_cores_16", "tensor cores, x to 16 bits (GEMMA_CUDA_MV_MMA=2)"),
                          ("tensor_cores_mlp", "tensor cores, x exact, the MLP too (GEMMA_CUDA_MV_MMA=1 GEMMA_CUDA_MLP=0)"),
                          ("mlp_mma", "the whole-MLP kernel on the tensor cores (GEMMA_CUDA_MLP=mma)"),
                          ("all_mma", "both on the tensor cores (GEMMA_CUDA_MV_MMA=1 GEMMA_CUDA_MLP=mma)")]:
            if run in steps and base:
                out.append(f"| {what} | {steps[run]:.3f} ms ({steps[run] / base:.2f}) | " +
                           " | ".join(f"{verify[run][n]:.3f} ms ({verify[run][n] / base:.2f})" for n in ns) + " |")
    out.extend(["", "Step time by kernel family (profiled run: every op timed with CUDA events and graphs off, so the total is above the graph run's step time; shares are what matter):", "", "```"] + table + ["```", ""])

if os.path.exists(os.path.join(res, "tiny_bench.out")) and os.path.exists(os.path.join(res, "tiny_profile.txt")):
    model_section("(a) the shipped small model (models/gemma4-tiny, its eval prompts, MAX_NEW_TOKENS 512)", "tiny_bench.out", "tiny_profile.txt")
model_section("(b) google/gemma-4-E4B dimensions, random bf16 weights (256-token prompts, 512 new tokens)", "e4b_bench.out", "e4b_profile.txt", json.loads(rd("e4b_hf.json")))
if os.path.exists(os.path.join(res, "e4b_ncu_split.md")):
    out.extend(["One replayed decode step of (b), every kernel timed on its own by ncu (bench/ncu_step_split.py: "
                "kernels grouped by role; serialised, so the sum is above the graph's step time, but each kernel's own cost is exact):", ""]
               + rd("e4b_ncu_split.md").strip().splitlines() + [""])
out.extend(["## One matrix product at a time (bf16 weights, E4B shapes)", "",
            "Every product on our kernels (GEMMA_CUDA_GEMM=own) against the default (auto: bf16 products of more than "
            "17 inputs on cuBLAS, x in two bf16 parts: its top 16 bits); time per call, GB/s of weights. The last rows are "
            "the backend's grouped launches, on our kernels.", ""] + rd("matmul.md").strip().splitlines() + [""])
out.extend(["## The matrix-vector kernels, CUDA cores against tensor cores (bf16, n = 1, E4B shapes)", "",
            "Back-to-back launches in a CUDA graph with PDL, weights cycled through copies larger than L2; us per launch (GB/s of weights).", ""] + rd("matvec_variants.md").strip().splitlines() + [""])
os.makedirs(os.path.dirname(page), exist_ok=True)
open(page, "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY
