#!/usr/bin/env bash
# bench_search.sh: the search benchmark. Builds bench_search, runs bayes, sobol and grid on
# five synthetic constrained surfaces (20 seeds each) and writes the figures, the exact command,
# the commit, the date and the machine to docs/bench/bench_search.md, replacing the whole page.
# Per-run lines go to BUILD_DIR/bench_search.log. Takes about 15-20 minutes on 2 cores (the GP fits).
#   usage: bench/bench_search.sh [extra bench_search arguments, e.g. --seeds 5]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-bench}
./scripts/build.sh "$build" -DWITH_CUDA=OFF
args=(--seeds 20 --cap 100 --budget 50 "$@")
cmd="OMP_WAIT_POLICY=passive $build/bench/bench_search ${args[*]}"
start=$(date -u '+%Y-%m-%d %H:%M UTC')
t0=$(date +%s)
table=$(OMP_WAIT_POLICY=passive "$build/bench/bench_search" "${args[@]}" 2>"$build/bench_search.log")
secs=$(($(date +%s) - t0))
cpu=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)
out=docs/bench/bench_search.md
mkdir -p "$(dirname "$out")"
cat >"$out" <<DOC
# Search benchmark: evaluations to a 99 % pick, bayes vs sobol vs grid

Written by \`bench/bench_search.sh\` (do not edit by hand) at commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown).
Run on $start, $cpu, $(nproc) cores, ${secs} s in all.

Command (after \`./scripts/build.sh $build -DWITH_CUDA=OFF\`):

    $cmd

What it measures (details in the comment at the top of \`bench/bench_search.c\`): five synthetic
surfaces shaped like the record's space (SLIDING_WINDOW 128-256, NUM_SPECULATIVE_TOKENS 1-8,
CENTROID_TOP_K 44-49 or 32-64, LM_HEAD_KEEPSET in {0, 8192, 12288, 16384, 24576}; about 31,000
or 44,000 points). The window sets ppl and speed, k is an inverted U, top-k has a shallow optimum,
keepsets below a coverage cliff give ppl = infinity, two surfaces crash in a corner. Constraint
ppl <= bound; tps measured with 2 % noise, ppl with 0.1 %. Each strategy runs in-process through
\`strategy.h\` exactly as the sweep driver calls it. After every evaluation the pick is taken (bayes:
its rank(), the best posterior mean with P(feasible) >= 0.95; sobol and grid: the best measured
feasible point). "Median evals to 99 %": the first evaluation at which the pick's true (noise-free)
tps is feasible and at least 99 % of the true constrained optimum (found by enumeration), median
over 20 seeds; ">100" when the median run did not get there within the cap of 100 evaluations.
"Violations at 50": runs whose pick after 50 evaluations violates the bound when re-evaluated
without noise. "Median final tps/opt": that pick's true tps over the optimum (0 when there is no
feasible pick yet). "Feasible" and "within 99 %" count lattice points.

Targets: bayes at most 40 evaluations median, violations 0.

$table
DOC
echo "bench_search.sh: wrote $out"
