#!/usr/bin/env bash
# run.sh: the main job. Installs what is missing, builds into build/, tunes our engine on the
# shipped small model on the CPU (search_spaces/default.yaml: Bayesian search over the sliding
# window, speculative tokens, centroid top-k and lm-head keepset, then the best candidates
# re-run on held-out prompts, each run paired with a run of the baseline), writes the report,
# and ends by printing the manifest path, the chosen knobs, the measured and verified tps and
# ppl, the answer (the speed-up over the baseline with its interval, or the baseline itself
# when no setting was measurably faster), and the report's path.
#
# Every run is a fresh study, out/default-<UTC time>; the sweep's own progress goes to stderr.
# Sized to finish within 15 minutes on 2 cores (the space file says how). Extra arguments go
# to `tuner sweep` (e.g. --workers 2). Exit status: the sweep's (0 with a manifest, 3 when no
# point stayed feasible: the report then says why), or 1 on an error.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
./scripts/setup.sh
# Only what the main job runs: the tuner and the engine. The CUDA backend only where a GPU is
# present (compiled for that GPU alone) or asked for with ENGINE_DEVICE=cuda; tests and
# benchmarks are test.sh's.
cuda=(-DWITH_CUDA=OFF)
if nvidia-smi -L >/dev/null 2>&1; then
    cuda=(-DWITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=native)
elif [ "${ENGINE_DEVICE:-}" = cuda ]; then
    cuda=(-DWITH_CUDA=ON)
fi
BUILD_TARGETS="tuner engine" ./scripts/build.sh build "${cuda[@]}"

study=default-$(date -u +%Y%m%d-%H%M%S)
dir=out/$study
rc=0
./build/tuner/tuner sweep search_spaces/default.yaml --study "$study" "$@" >/dev/null || rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ]; then
    echo "run.sh: the sweep stopped with exit status $rc (see above); resume it with:" >&2
    echo "  ./build/tuner/tuner sweep search_spaces/default.yaml --study $study" >&2
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
