#!/usr/bin/env bash
# bench_precision_gpu.sh: what weight precision buys on the GPU, for a machine with an NVIDIA GPU,
# PyTorch and transformers (nothing is downloaded). In one run, on a model with
# google/gemma-4-E4B's dimensions and random bf16 weights (tools/make_e4b_random.py, kept in
# WORK_DIR), 2 prompts of 256 tokens and 128 new tokens each (1 warm-up), batch 1, no
# speculation:
#   - the device's copy bandwidth (decode_profile copy-bw);
#   - `engine bench` at WEIGHT_DTYPE bf16, int8 (group 32), int4 (group 32 and 128), each with the
#     full head and with LM_HEAD_KEEPSET=12000 (a keepset file of 16384 random ids is written
#     into the model folder), the head in the same dtype as the layers (HEAD_DTYPE): decode and
#     prefill tokens/s, weight bytes read per token, the floor (copy bandwidth / bytes per
#     token), our share of it and the time over the floor per step; int8 and int4 full-head
#     again with GEMMA_CUDA_DEQUANT=keep (prefill's 16-bit copies kept on the device; two
#     warm-up prompts, as a copy is made at its matrix's second product);
#   - the decode step split by kernel family (GEMMA_CUDA_PROFILE=1: every op timed, graphs off)
#     at bf16 and int4 g32, keepset;
#   - a projection to A10G, L4 and RTX 4090: arithmetic from the measured bytes per token and
#     time over the floor, labelled as such.
# Results: docs/bench/bench_precision_gpu.md, rewritten whole by each run; raw logs in RESULTS_DIR.
#
#   bench/bench_precision_gpu.sh [RESULTS_DIR]   (default build-gpu/bench-precision)
#   GPU_BIN_DIR=DIR: use prebuilt DIR/engine and DIR/decode_profile instead of building
#   WORK_DIR=DIR: where the random E4B model is written (default /tmp/e4b-random, ~15 GB)
#   PRECISIONS="bf16 int4:32": only these weights[:group] (default: bf16 int8:32 int4:32 int4:128),
#   HEADS="keep": only these heads (default: full keep), PROFILE_RUNS=0: no kernel-family split -
#   a shorter run; the page then holds the rows measured (bf16 full is always run: the ratios'
#   base)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RES=${1:-$ROOT/build-gpu/bench-precision}
WORK=${WORK_DIR:-/tmp/e4b-random}
mkdir -p "$RES" "$WORK"
RES=$(cd "$RES" && pwd)
source bench/gpu_bins.sh
COMMAND="bench/bench_precision_gpu.sh" # the results folder, its only argument, is no part of the figures

nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$RES/gpu.txt"
"$PROFILE" copy-bw | tee "$RES/copy_bw.txt"

if [[ ! -f $WORK/model/config.json ]]; then
  PYTHONUNBUFFERED=1 python3 tools/make_e4b_random.py "$WORK" --prompts 2 --prompt-len 256 \
    --hf-new-tokens 8 2>&1 | tee "$RES/e4b_make.log"
fi
# A keepset for the random model: 16384 distinct ids in a fixed random order (the engine keeps the
# first LM_HEAD_KEEPSET of them).
python3 - "$WORK/model" <<'PY'
import json, os, random, sys
d = sys.argv[1]
vocab = json.load(open(os.path.join(d, "config.json"))).get("vocab_size") or \
    json.load(open(os.path.join(d, "config.json")))["text_config"]["vocab_size"]
ids = random.Random(12000).sample(range(vocab), 16384)
open(os.path.join(d, "keepset.txt"), "w").write("\n".join(map(str, ids)) + "\n")
PY

run() { # name env...: one engine bench on the random model
  local name=$1; shift
  env ENGINE_DEVICE=cuda WARMUP_NUM_PROMPTS=1 MAX_NEW_TOKENS=128 "$@" "$ENGINE" bench \
    "$WORK/model" --prompts "$WORK/prompts.jsonl" >"$RES/$name.out" 2>"$RES/$name.err" ||
    { tail -n 5 "$RES/$name.err" >&2; echo "bench_precision_gpu: $name FAILED" >&2; exit 1; }
  echo "$name: $(tail -n 1 "$RES/$name.out" | cut -c1-160)"
}
rm -f "$RES"/*_full.out "$RES"/*_keep.out "$RES"/*_kept.out "$RES"/*_profile.err
run bf16_full WEIGHT_DTYPE=bf16 HEAD_DTYPE=bf16
for prec in ${PRECISIONS:-bf16 int8:32 int4:32 int4:128}; do
  dt=${prec%%:*} g=${prec#*:}
  [[ $prec == bf16 ]] && g=32
  name=${dt}_g$g
  [[ $dt == bf16 ]] && name=bf16
  for head in ${HEADS:-full keep}; do
    [[ $name == bf16 && $head == full ]] && continue
    if [[ $head == full ]]; then
      run "${name}_full" WEIGHT_DTYPE="$dt" WEIGHT_GROUP="$g" HEAD_DTYPE="$dt"
      # (bf16 full is the run before the loop; a copy is kept from its matrix's second product,
      # so two warm-up prompts)
      run "${name}_kept" WEIGHT_DTYPE="$dt" WEIGHT_GROUP="$g" HEAD_DTYPE="$dt" \
        GEMMA_CUDA_DEQUANT=keep WARMUP_NUM_PROMPTS=2
    else
      run "${name}_keep" WEIGHT_DTYPE="$dt" WEIGHT_GROUP="$g" HEAD_DTYPE="$dt" LM_HEAD_KEEPSET=12000
    fi
  done
done
[[ ${PROFILE_RUNS:-1} == 0 ]] && PROFILED="" || PROFILED="bf16 int4_g32"
for name in $PROFILED; do
  dt=${name%%_*}
  env GEMMA_CUDA_PROFILE=1 ENGINE_DEVICE=cuda WARMUP_NUM_PROMPTS=0 MAX_NEW_TOKENS=64 \
    WEIGHT_DTYPE="$dt" WEIGHT_GROUP=32 HEAD_DTYPE="$dt" LM_HEAD_KEEPSET=12000 "$ENGINE" bench \
    "$WORK/model" --prompts "$WORK/prompts.jsonl" >"$RES/${name}_profile.out" \
    2>"$RES/${name}_profile.err" || echo "bench_precision_gpu: the $name profile FAILED"
done

python3 - "$RES" "$ROOT/docs/bench/bench_precision_gpu.md" "$COMMAND" <<'PY'
import json, os, socket, sys
res, page, command = sys.argv[1:4]
rd = lambda f: open(os.path.join(res, f)).read()
last = lambda f: json.loads(rd(f).strip().splitlines()[-1])
bw = float(rd("copy_bw.txt").split()[-1])  # GB/s
gpu = rd("gpu.txt").strip().splitlines()[-1]
names = ["bf16", "int8_g32", "int4_g32", "int4_g128"]
rows, got = [], {}
for n in names:
    for h in ["full", "keep"]:
        if os.path.exists(os.path.join(res, f"{n}_{h}.out")):
            got[(n, h)] = last(f"{n}_{h}.out")
runs = [(n, h) for n in names for h in ["full", "keep"] if (n, h) in got]
b0 = got[("bf16", "full")]["decode_tps"]
out = ["# GPU benchmark: weight precision", "",
       f"Written whole by `{command.strip()}` (its header says what it runs); the raw logs stay in "
       f"its results folder.", "",
       f"Machine: {socket.gethostname()}, GPU {gpu}, copy bandwidth {bw:.0f} GB/s (decode_profile "
       f"copy-bw). Model: google/gemma-4-E4B's dimensions with random bf16 weights "
       f"(tools/make_e4b_random.py), 2 prompts of 256 tokens, 128 new tokens each, batch 1, no "
       f"speculation. The head is held in the layers' dtype (HEAD_DTYPE); `keepset` is "
       f"LM_HEAD_KEEPSET=12000 over a random keepset file. Random weights say nothing about quality "
       f"(docs/engine.md has the small model's perplexity per precision).", "",
       "| weights | head | decode tokens/s | vs bf16 full | prefill tokens/s | prefill, copies kept "
       "| weight bytes / token | floor tokens/s | share of floor | step | over the floor |",
       "|---|---|---|---|---|---|---|---|---|---|---|"]
for n, h in runs:
        r = got[(n, h)]
        wb = r["weight_bytes_per_token"]
        floor = bw * 1e9 / wb
        d = r["decode_tps"]
        kf = os.path.join(res, f"{n}_kept.out")
        kept = f"{last(f'{n}_kept.out')['prefill_tps']:.0f}" if h == "full" and os.path.exists(kf) else ""
        out.append(f"| {n.replace('_g', ' g')} | {'full' if h == 'full' else 'keepset 12000'} | "
                   f"{d:.1f} | {d / b0:.2f}x | {r['prefill_tps']:.0f} | {kept} | {wb / 1e9:.3f} GB | "
                   f"{floor:.1f} | {100 * d / floor:.1f} % | {1e3 / d:.3f} ms | "
                   f"{1e3 / d - 1e3 / floor:.3f} ms |")
out += ["", "`prefill, copies kept`: the same run under GEMMA_CUDA_DEQUANT=keep, each int8 / int4 "
        "matrix's 16-bit copy for cuBLAS kept on the device from the warm-up prompts (weights "
        "held twice; decoding reads the int8 / int4 ones alone).", "",
        "Targets (same GPU, same run): int4 + keepset decode at least 2.5x bf16 decode, int8 "
        "at least 1.7x.", ""]
measured = [f"{n.replace('_g', ' g')} + keepset {got[(n, 'keep')]['decode_tps'] / b0:.2f}x"
            for n in ("int4_g32", "int8_g32") if (n, "keep") in got]
out.append(f"Measured: {', '.join(measured)} the bf16 full-head decode.")
profiled = [n for n in ["bf16", "int4_g32"] if os.path.exists(os.path.join(res, f"{n}_profile.err"))]
out.append("")
if profiled:
    out += ["## The decode step by kernel family (GEMMA_CUDA_PROFILE=1: graphs off, every op timed)", ""]
for n in profiled:
    err = rd(f"{n}_profile.err")
    i = err.find("cuda profile")
    out += [f"{n}, keepset 12000:", "", "```", (err[i:] if i >= 0 else err[-2000:]).strip(), "```", ""]
out += ["## Projection to other GPUs (arithmetic, not a measurement)", "",
        "step = weight bytes per token / (nominal bandwidth x the share of nominal this GPU's copy "
        "reached) + the time over the floor measured here. The overhead is kept as measured, "
        "which flatters slower GPUs whose kernels also run longer tails.", "",
        "| weights | head | A10G (600 GB/s) | L4 (300 GB/s) | RTX 4090 (1008 GB/s) |", "|---|---|---|---|---|"]
nominal = {"H100": 3350.0, "H200": 4800.0}
eff = next((bw / v for k, v in nominal.items() if k in gpu), 0.9)
eff = min(eff, 0.95)
for n, h in runs:
        r = got[(n, h)]
        wb = r["weight_bytes_per_token"]
        over = 1 / r["decode_tps"] - wb / (bw * 1e9)
        cells = [f"{1 / (wb / (g * eff * 1e9) + over):.0f}" for g in (600, 300, 1008)]
        out.append(f"| {n.replace('_g', ' g')} | {h} | " + " | ".join(cells) + " |")
out += ["", f"(share of nominal bandwidth used: {eff:.2f})", ""]
open(page, "w").write("\n".join(out))
print("\n".join(out))
PY
