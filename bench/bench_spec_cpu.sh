#!/usr/bin/env bash
# bench_spec_cpu.sh: speculative decoding, the drafter's CENTROID_TOP_K and the lm-head keepset on
# the shipped small model (models/gemma4-tiny + models/gemma4-tiny-assistant) on this CPU, written
# to docs/bench/bench_spec_cpu.md with the machine, the load, the exact command and the commit,
# replacing the whole page.
#
# Tables:
#   1. tps for NUM_SPECULATIVE_TOKENS k = 0..8 at the default CENTROID_TOP_K (the assistant's
#      centroid_intermediate_top_k), with mean accepted drafts, tokens per verify pass, the cost of
#      one verify pass and one draft step, and the decode-time shares (draft / verify / other);
#   2. tps against CENTROID_TOP_K at the best k of table 1;
#   3. tps (k = 0) and perplexity (ppl_tune.jsonl) against LM_HEAD_KEEPSET, with coverage.
# Every run's output_hash (FNV-1a over all generated ids) is printed: equal hashes across k and
# top-k are the lossless rule, measured.
#
#   bench/bench_spec_cpu.sh [BUILD_DIR]        (default build-bench; configured and built here)
#
# Environment: NEW_TOKENS (default 128), PROMPTS (first N prompts of prompts_tune.jsonl, default
# 8), RECORDS (first N records of ppl_tune.jsonl for perplexity, default 8), REPEATS (runs per
# point, the best decode tps kept, default 2), WARMUP (default 1), THREADS (default 1), OUT
# (default docs/bench/bench_spec_cpu.md).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-bench}
new_tokens=${NEW_TOKENS:-128}
n_prompts=${PROMPTS:-8}
n_records=${RECORDS:-8}
repeats=${REPEATS:-2}
warmup=${WARMUP:-1}
threads=${THREADS:-1}
out=${OUT:-docs/bench/bench_spec_cpu.md}
model=models/gemma4-tiny
command_line="bench/bench_spec_cpu.sh${*:+ $*}"
[ -n "${NEW_TOKENS:-}${PROMPTS:-}${RECORDS:-}${REPEATS:-}${WARMUP:-}${THREADS:-}" ] &&
    command_line="NEW_TOKENS=$new_tokens PROMPTS=$n_prompts RECORDS=$n_records REPEATS=$repeats WARMUP=$warmup THREADS=$threads $command_line"
[ -d "$model" ] && [ -d "$model-assistant" ] || {
    echo "bench_spec_cpu.sh: needs $model and $model-assistant" >&2
    exit 1
}

./scripts/build.sh "$build" -DWITH_CUDA=OFF >&2
engine=$build/engine/engine
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
head -n "$n_prompts" "$model/eval/prompts_tune.jsonl" >"$tmp/prompts.jsonl"
head -n "$n_records" "$model/eval/ppl_tune.jsonl" >"$tmp/ppl.jsonl"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# run NAME ENV...: engine bench REPEATS times, the run with the best decode tps kept in
# $tmp/NAME.json (other work on the machine only ever slows a run down)
run() {
    local name=$1 i
    shift
    for i in $(seq "$repeats"); do
        echo "== $name ($i/$repeats): $*" >&2
        env "$@" MAX_NEW_TOKENS="$new_tokens" WARMUP_NUM_PROMPTS="$warmup" \
            "$engine" bench "$model" --prompts "$tmp/prompts.jsonl" --threads "$threads" \
            2>"$tmp/$name.log" | tail -n 1 >"$tmp/$name.$i.json"
    done
    python3 bench/spec_report.py best-of "$tmp" "$name" "$repeats"
}
for k in 0 1 2 3 4 5 6 7 8; do run "k$k" NUM_SPECULATIVE_TOKENS=$k; done
best=$(python3 bench/spec_report.py best-k "$tmp")
n_centroids=$(python3 -c "import json; print(json.load(open('$model-assistant/config.json'))['num_centroids'])")
topks="1 2 4 8 16 32 $n_centroids"
for t in $topks; do run "t$t" NUM_SPECULATIVE_TOKENS="$best" CENTROID_TOP_K="$t"; done
sizes="256 512 1024 2048 3072 4096 6144"
for n in $sizes; do
    run "ks$n" LM_HEAD_KEEPSET="$n"
    echo "== ppl, keepset $n" >&2
    LM_HEAD_KEEPSET=$n "$engine" ppl "$model" --ppl "$tmp/ppl.jsonl" \
        --threads "$threads" 2>>"$tmp/ks$n.log" | tail -n 1 >"$tmp/ppl$n.json"
done
echo "== ppl, full head" >&2
"$engine" ppl "$model" --ppl "$tmp/ppl.jsonl" --threads "$threads" \
    2>"$tmp/ppl_full.log" | tail -n 1 >"$tmp/ppl_full.json"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

cpu=$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
mkdir -p "$(dirname "$out")"
python3 - "$tmp" "$out" "$best" "$topks" "$sizes" <<EOF
import json, sys
sys.path.insert(0, "bench")
from spec_report import k_table, step_seconds
tmp, out, best, topks, sizes = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split(), sys.argv[5].split()
J = lambda n: json.load(open(f"{tmp}/{n}.json"))
L = []
w = L.append
w("# Speculative decoding, CENTROID_TOP_K and the lm-head keepset on the CPU (gemma4-tiny)\n")
w("Produced by \`$command_line\` on $(date -u +%Y-%m-%d) (git $(git rev-parse --short HEAD)).")
w("Machine: $cpu, $(nproc) cores visible, $threads engine thread(s); load average "
  "$load_before before, $load_after after (other work shares this machine: absolute figures "
  "are noisy, compare within a table).")
w("Protocol: \`engine bench models/gemma4-tiny\` on the first $n_prompts prompts of "
  "prompts_tune.jsonl, $new_tokens new tokens each, $warmup warm-up prompt(s); tps = completion "
  "tokens / wall time (prefill included). Drafter: models/gemma4-tiny-assistant.\n")
base = J("k0")
w("## 1. tps against NUM_SPECULATIVE_TOKENS (default CENTROID_TOP_K)\n")
rows, hashes = k_table(J, 2)
L.extend(rows)
step0 = step_seconds(base)
w(f"\nAll {len(hashes) == 1 and 'nine runs served identical tokens (one output_hash)' or 'RUNS DIFFER: ' + str(hashes)}. "
  "k = 0 is plain greedy through bench.c; the shares are of decode time (prefill excluded): "
  "draft = the drafter's steps, verify = the target's pass over k+1 positions plus its head, "
  "other = acceptance, rollback and bookkeeping. Verify ms is one verify pass (at k = 0 one "
  "decode step); draft ms is one drafter step.\n")
w(f"## 2. tps against CENTROID_TOP_K at k = {best} (the best decode tps of table 1)\n")
w("| CENTROID_TOP_K | tps | decode tps | accepted drafts / step | draft ms / token | output_hash |")
w("|---|---|---|---|---|---|")
for t in topks:
    r = J(f"t{t}")
    sp, sh = r["speculation"], r["decode_time_share"]
    drf = sh["draft"] * r["decode_s"] / sp["drafted"] if sp["drafted"] else 0
    w(f"| {t} | {r['tps']:.1f} | {r['decode_tps']:.1f} | {r['accept_len']:.2f} | {drf * 1e3:.2f} | "
      f"{r['output_hash']} |")
w("\nCENTROID_TOP_K only moves proposals (hence speed): the served tokens stay those of table 1.\n")
w("## 3. tps and perplexity against LM_HEAD_KEEPSET (k = 0)\n")
full = J("ppl_full")
w("| LM_HEAD_KEEPSET | tps | decode tps | ppl (first $n_records records of ppl_tune) | target coverage | targets outside | output_hash |")
w("|---|---|---|---|---|---|---|")
w(f"| 0 (full head) | {base['tps']:.1f} | {base['decode_tps']:.1f} | {full['ppl']:.3f} | 100% | 0 | {base['output_hash']} |")
for n in sizes:
    r, p = J(f"ks{n}"), J(f"ppl{n}")
    ks = p.get("keepset", {})
    ppl = "inf (null: " + p["reason"].split(":")[0] + ")" if p["ppl"] is None else f"{p['ppl']:.3f}"
    w(f"| {n} | {r['tps']:.1f} | {r['decode_tps']:.1f} | {ppl} | {ks.get('ppl_target_coverage', 0):.2%} | "
      f"{ks.get('ppl_targets_outside', '-')} | {r['output_hash']} |")
w("\nA target outside the keepset has probability zero under the pruned head, so perplexity is "
  "infinite (reported as null with the count) until the keepset covers every target token. "
  "On this model the head is a small part of a step (6144 x 256 of ~8.8M parameters), so the "
  "keepset's speed gain is small here; on E4B the head is 1.34 GB of bf16 and dominates a step.\n")
b = J(f"k{best}")
sh = b["decode_time_share"]
w("## Where a decode step goes\n")
w(f"At k = {best}: the drafter takes {sh['draft']:.1%} of decode time, the verify pass (target "
  f"over k+1 = {best + 1} positions, then the head) {sh['verify']:.1%}, and everything else "
  f"(acceptance, rollback, bookkeeping) {sh['other']:.2%}. Prefill is outside the decode time: "
  f"{b['prefill_s'] / b['wall_s']:.0%} of the timed wall time at k = {best} "
  f"({base['prefill_s'] / base['wall_s']:.0%} at k = 0), which is why tps moves less than decode "
  "tps with these ~600-900-token prompts and 128 new tokens.\n")
ver_best = sh["verify"] * b["decode_s"] / b["speculation"]["steps"]
w("## Reading the figures\n")
w("A speculative step serves 1 + (accepted drafts) tokens and costs one verify pass over k+1 "
  "positions plus k drafter steps, so it pays when (tokens per verify) x (one decode step) exceeds "
  f"that cost. Here one verify over {best + 1} positions costs {ver_best / step0:.2f} decode steps: "
  "the small model's 17 MB of weights stay in this CPU's caches and the per-position work "
  "(attention over the ~600-900 cached positions, the 6144-row head, the layers' arithmetic) "
  "dominates, so a forward pass is bound by arithmetic, not by reading weights, and every extra "
  "position costs nearly a whole step. That is why speculation does not pay on this CPU even with "
  "the drafter accepted as shown. The lever is for memory-bound targets - E4B reads gigabytes "
  "of weights per step, and on a GPU a verify over a few positions costs about one decode step - "
  "where the tokens-per-verify column is close to the speed-up itself.\n")
open(out, "w").write("\n".join(L) + "\n")
EOF
echo "wrote $out" >&2
