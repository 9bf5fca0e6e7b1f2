#!/usr/bin/env bash
# bench_search.sh: the search benchmark. Builds bench_search, runs bayes, sobol and grid on
# seven synthetic constrained surfaces (20 seeds each), times bayes's proposals over a 200-trial
# run, and writes the figures, the exact commands, the commit, the date and the machine to
# docs/bench/bench_search.md, replacing the whole page. Per-run lines go to
# BUILD_DIR/bench_search.log. With BEFORE_REV=<git revision>, bayes as it was at that revision
# (its tuner library, built in a temporary folder, driven by this bench_search.c) runs first on
# the same surfaces and seeds, and the page shows both. Takes 10-15 minutes on 2 cores, and
# 20-25 more with BEFORE_REV.
#   usage: [BEFORE_REV=REV] bench/bench_search.sh [extra bench_search arguments, e.g. --seeds 5]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-bench}
BUILD_TARGETS=bench_search ./scripts/build.sh "$build" -DWITH_CUDA=OFF
args=(--seeds 20 --cap 100 --budget 50 --by 60 "$@")
run() { OMP_WAIT_POLICY=passive "$@"; }

before=""
if [ -n "${BEFORE_REV:-}" ]; then
    rev=$(git rev-parse --short "$BEFORE_REV")
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    git archive "$rev" | tar -x -C "$tmp"
    cp bench/bench_search.c "$tmp/bench/bench_search.c"
    BUILD_TARGETS=bench_search "$tmp/scripts/build.sh" "$tmp/build" -DWITH_CUDA=OFF >/dev/null
    bcmd="OMP_WAIT_POLICY=passive <$rev with this bench_search.c>/bench/bench_search ${args[*]} --strategies bayes"
    btable=$(run "$tmp/build/bench/bench_search" "${args[@]}" --strategies bayes 2>"$build/bench_search_before.log")
    before=$(printf '## Before: bayes at %s\n\nCommand (%s built in a temporary folder, with this commit'"'"'s `bench/bench_search.c`):\n\n    %s\n\n%s\n' \
        "$rev" "$rev" "$bcmd" "$btable")
fi

cmd="OMP_WAIT_POLICY=passive $build/bench/bench_search ${args[*]}"
tcmd="OMP_WAIT_POLICY=passive $build/bench/bench_search --seeds 0 --timing 200 --surfaces A"
start=$(date -u '+%Y-%m-%d %H:%M UTC')
t0=$(date +%s)
table=$(run "$build/bench/bench_search" "${args[@]}" 2>"$build/bench_search.log")
load=$(cut -d' ' -f1-3 /proc/loadavg)
timing=$(run "$build/bench/bench_search" --seeds 0 --timing 200 --surfaces A 2>/dev/null)
secs=$(($(date +%s) - t0))
cpu=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)
out=docs/bench/bench_search.md
mkdir -p "$(dirname "$out")"
cat >"$out" <<DOC
# Search benchmark: evaluations to a 99 % pick, bayes vs sobol vs grid

Written by \`bench/bench_search.sh\` (do not edit by hand) at commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown).
Run on $start, $cpu, $(nproc) cores, ${secs} s in all (without the "before" run).

Commands (after \`./scripts/build.sh $build -DWITH_CUDA=OFF\`):

    $cmd
    $tcmd

What it measures (details in the comment at the top of \`bench/bench_search.c\`): seven synthetic
surfaces shaped like the record's space (SLIDING_WINDOW 128-256, NUM_SPECULATIVE_TOKENS 1-8,
CENTROID_TOP_K 44-49 or 32-64, LM_HEAD_KEEPSET in {0, 8192, 12288, 16384, 24576}; about 31,000,
44,000 or 88,000 points). The window sets ppl and speed, k is an inverted U, top-k has a shallow
optimum, keepsets below a coverage cliff give ppl = infinity, two surfaces crash in a corner. F
has three infinite keepsets that would be the fastest, under a tight budget; G has two peaks in
(k, top-k), a broad one at 0.955 of the optimum and a narrow global one (only its own (k, top-k)
is within 99 %). Constraint ppl <= bound; tps measured with 2 % noise (and bayes told so, as the
sweep tells it the noise it measured), ppl with 0.1 %. Each strategy runs in-process through
\`strategy.h\` exactly as the sweep driver calls it. After every evaluation the pick is taken
(bayes: its rank(), the best posterior mean with P(feasible) >= 0.95; sobol and grid: the best
measured feasible point). "Median evals to 99 %": the first evaluation at which the pick's true
(noise-free) tps is feasible and at least 99 % of the true constrained optimum (found by
enumeration), median over 20 seeds; ">100" when the median run did not get there within the cap
of 100 evaluations. "Within 60": runs that got there by evaluation 60. "Violations at 50": runs
whose pick after 50 evaluations violates the bound when re-evaluated without noise. "Median final
tps/opt": that pick's true tps over the optimum (0 when there is no feasible pick yet).
"Certain-infinite proposals": proposals of a keepset already measured infinite at two or more
settings and never finite, per run (the most in one run). "Feasible" and "within 99 %" count
lattice points. Proposal times: one bayes run on surface A to 200 evaluations; load average
$load when it started.

Targets: bayes at most 40 evaluations median on A-F and no worse than before on A-E; on G, at
least 18 of 20 runs within 60; violations 0; certain-infinite proposals 0; a proposal under
0.2 s at 200 trials on 2 idle cores.

$table
$timing

$before
DOC
echo "bench_search.sh: wrote $out"
