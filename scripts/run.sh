#!/usr/bin/env bash
# run.sh: the main job. Installs what is missing, builds into build/, runs a sweep of
# search_spaces/synthetic.yaml and prints the winning manifest (stdout) and its environment.
#
# For now the sweep drives the SYNTHETIC test engine (tests/tuner/synth_engine.c), whose
# tokens/s and perplexity are closed-form functions of the knobs, not a real model. It
# switches to our engine and the shipped model once those land.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh build

echo "run.sh: NOTE: this sweep uses the synthetic test engine (tests/tuner/synth_engine.c), not a" >&2
echo "run.sh: real model: its figures are formulas of the knobs, shaped like the public record." >&2
# --new: every run is a complete sweep in a fresh study folder (out/synthetic, synthetic-2, ...).
./build/tuner/tuner sweep search_spaces/synthetic.yaml --new | tee /tmp/run-manifest.$$.json
study_dir=$(grep -o '"study_dir":[^,]*' /tmp/run-manifest.$$.json | sed 's/.*"\(.*\)"/\1/')
rm -f /tmp/run-manifest.$$.json
echo >&2
echo "run.sh: the best points (tuner show $study_dir):" >&2
./build/tuner/tuner show "$study_dir" | awk "NR <= 8" >&2
echo "run.sh: to reproduce the winner: eval \"\$(./build/tuner/tuner env $study_dir/manifest.json)\"" >&2
./build/tuner/tuner env "$study_dir/manifest.json"
