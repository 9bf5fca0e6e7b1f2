#!/usr/bin/env bash
# run.sh: the main job. Installs what is missing, builds into build/, tunes our engine on the
# shipped small model on the CPU (search_spaces/default.yaml: Bayesian search over the sliding
# window, speculative tokens, centroid top-k, lm-head keepset and weight precision, then the best
# candidates re-run on held-out prompts, each run paired with a run of the baseline), writes the
# report, and ends by printing the manifest path, the chosen knobs, the measured and verified tps
# and ppl, the answer (the speed-up over the baseline with its interval, or the baseline itself
# when no setting was measurably faster), and the report's path.
#
# Where nvidia-smi sees an NVIDIA GPU the engine runs there (search_spaces/default_gpu.yaml: the
# same knobs, constraint and verification); `run.sh --cpu` keeps it on the CPU. It says which.
#
# Every run is a fresh study, out/default-<UTC time>; the sweep's own progress goes to stderr.
# Sized to finish within 15 minutes on 2 cores (the space file says how). Extra arguments go
# to `tuner sweep` (e.g. --workers 2). Exit status: the sweep's (0 with a manifest, 3 when no
# point stayed feasible: the report then says why), or 1 on an error.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
force_cpu=0
if [ "${1:-}" = --cpu ]; then
    force_cpu=1
    shift
fi
gpu=""
[ "$force_cpu" = 1 ] || gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1) || gpu=""
./scripts/setup.sh
# Only what the main job runs: the tuner and the engine. The CUDA backend only where a GPU is
# present (compiled for that GPU alone) or asked for with ENGINE_DEVICE=cuda; tests and
# benchmarks are test.sh's.
cuda=(-DWITH_CUDA=OFF)
if [ -n "$gpu" ]; then
    cuda=(-DWITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=native)
elif [ "${ENGINE_DEVICE:-}" = cuda ]; then
    cuda=(-DWITH_CUDA=ON)
fi
BUILD_TARGETS="tuner engine" ./scripts/build.sh build "${cuda[@]}"

space=search_spaces/default.yaml
if [ -n "$gpu" ]; then
    space=search_spaces/default_gpu.yaml
    echo "run.sh: tuning on the GPU ($gpu) with $space; ./scripts/run.sh --cpu keeps it on the CPU" >&2
elif [ "$force_cpu" = 1 ]; then
    echo "run.sh: tuning on the CPU (--cpu) with $space" >&2
else
    echo "run.sh: tuning on the CPU (no NVIDIA GPU found) with $space" >&2
fi
study=$(basename "$space" .yaml)-$(date -u +%Y%m%d-%H%M%S)
dir=out/$study
rc=0
./build/tuner/tuner sweep "$space" --study "$study" "$@" >/dev/null || rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ]; then
    echo "run.sh: the sweep stopped with exit status $rc (see above); resume it with:" >&2
    echo "  ./build/tuner/tuner sweep $space --study $study" >&2
    exit "$rc"
fi
report=$(./build/tuner/tuner report "$dir")

echo
echo "study:    $dir (table: ./build/tuner/tuner show $dir)"
if [ "$rc" -eq 0 ]; then
    # The figures, read from the manifest with Python's json module (setup installs python3).
    python3 - "$dir/manifest.json" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
fmt = lambda v: "inf" if v is None else f"{v:.6g}"
print(f"manifest: {sys.argv[1]}")
print("knobs:    " + " ".join(f"{k}={v}" for k, v in m["point"].items()))
for block in ("measured", "verified"):
    b = m.get(block)
    if not b:
        continue
    med = b["median"]
    print(f"{block + ':':9} tps {fmt(med.get('tps'))}  ppl {fmt(med.get('ppl'))}"
          f"  ({b['runs']} run(s) on the {b['prompt_set']} prompts)")
ver = m.get("verification", {})
if ver.get("summary"):
    print(f"answer:   {ver['summary']}")
for w in m.get("warnings", []):
    print(f"warning:  {w}")
EOF
    echo "reproduce: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["engine"]["reproduce"])' "$dir/manifest.json")"
else
    echo "manifest: none: no point stayed inside the perplexity budget (exit 3); the report says why"
fi
echo "report:   $report"
echo "run.sh: done in $(($(date +%s) - t0)) s"
exit "$rc"
