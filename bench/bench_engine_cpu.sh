#!/usr/bin/env bash
# bench_engine_cpu.sh: the engine's CPU tokens/s beside this machine's bandwidth floor, written to
# docs/bench/bench_engine_cpu.md (figures, machine, the exact command and the commit), replacing
# the whole page.
#
# Single-stream decoding reads every weight once per token, so the fastest any CPU decoder can go
# is (measured memory read bandwidth) / (weight bytes read per token). This script measures the
# bandwidth (bench/membw), runs `engine bench` on the largest fixture model (tests/engine/fixtures)
# and on the shipped small model (models/gemma4-tiny, when it exists), and reports decode tokens/s
# as a share of that floor. Models whose weights fit in the CPU caches can beat a DRAM floor; the
# table says so rather than hiding it.
#
#   bench/bench_engine_cpu.sh [BUILD_DIR]        (default build-bench; configured and built here)
#
# Environment: NEW_TOKENS (new tokens per prompt, default 128), PROMPTS (prompts per model,
# default 8), WARMUP (default 1), THREADS (thread counts to run, default "1 <all cores>"),
# MEMBW_MIB (default 1024), OUT (default docs/bench/bench_engine_cpu.md).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-bench}
new_tokens=${NEW_TOKENS:-128}
n_prompts=${PROMPTS:-8}
warmup=${WARMUP:-1}
threads_list=${THREADS:-1 $(nproc)}
out=${OUT:-docs/bench/bench_engine_cpu.md}
command_line="bench/bench_engine_cpu.sh${*:+ $*}"
[ -n "${NEW_TOKENS:-}${PROMPTS:-}${WARMUP:-}${THREADS:-}" ] &&
    command_line="NEW_TOKENS=$new_tokens PROMPTS=$n_prompts WARMUP=$warmup THREADS=\"$threads_list\" $command_line"

./scripts/build.sh "$build" -DWITH_CUDA=OFF >&2
engine=$build/engine/engine
membw=$build/bench/membw
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A JSON field (number or string) of the last line of a file.
jget() {
    tail -n 1 "$1" | grep -o "\"$2\": *\(\"[^\"]*\"\|[-0-9.eE+]*\|null\)" | sed -n 1p | cut -d: -f2- |
        tr -d '" '
}

# Positions the perplexity pass runs over in a ppl file: context + targets - 1 per record.
ppl_positions() {
    awk '{ n = gsub(/[0-9]+/, "&"); if (n) s += n - 1 } END { print s + 0 }' "$1"
}

load=$(cut -d' ' -f1-3 /proc/loadavg)
echo "== memory read bandwidth" >&2
"$membw" "${MEMBW_MIB:-1024}" 10 >"$tmp/membw"
bw=$(jget "$tmp/membw" read_gbps)
bw_threads=$(jget "$tmp/membw" threads)

rows=()
raws=()
# bench_model NAME DIR PROMPTS_FILE PPL_FILE: one row per thread count
bench_model() {
    local name=$1 dir=$2 prompts=$3 ppl=$4 th
    for th in $threads_list; do
        bench_model_threads "$name" "$dir" "$prompts" "$ppl" "$th"
    done
}
bench_model_threads() {
    local name=$1 dir=$2 prompts=$3 ppl=$4 th=$5
    echo "== $name ($dir), $th threads" >&2
    local r=$tmp/out.$th
    MAX_NEW_TOKENS=$new_tokens WARMUP_NUM_PROMPTS=$warmup \
        "$engine" bench "$dir" --prompts "$prompts" --ppl "$ppl" --threads "$th" >"$r"
    local bpt tps dtps ptps ppl_v pps floor share
    bpt=$(jget "$r" bytes_per_token)
    tps=$(jget "$r" tps)
    dtps=$(jget "$r" decode_tps)
    ptps=$(jget "$r" prefill_tps)
    ppl_v=$(jget "$r" ppl)
    pps=$(awk -v p="$(ppl_positions "$ppl")" -v s="$(jget "$r" ppl_s)" 'BEGIN{printf "%.1f", (s > 0 ? p / s : 0)}')
    floor=$(awk -v bw="$bw" -v b="$bpt" 'BEGIN{printf "%.1f", bw * 1e9 / b}')
    share=$(awk -v d="$dtps" -v f="$floor" 'BEGIN{printf "%.1f %%", 100 * d / f}')
    rows+=("| $name | $th | $(awk -v b="$bpt" 'BEGIN{printf "%.2f MB", b / 1e6}') | $floor | $(printf %.1f "$tps") | $(printf %.1f "$dtps") | $share | $(printf %.1f "$ptps") | $pps | $ppl_v |")
    raws+=("$name, $th threads: $(tail -n 1 "$r")")
}

# The largest fixture model (most weight bytes), on a synthetic prompt set: the fixtures are
# random-init models without a tokenizer, so prompts are token ids.
fixture=$(for d in tests/engine/fixtures/*/; do
    [ -f "$d/config.json" ] || continue
    echo "$(cat "$d"/*.safetensors 2>/dev/null | wc -c) ${d%/}"
done | sort -n | tail -n 1 | cut -d' ' -f2-)
if [ -n "$fixture" ]; then
    for i in $(seq 1 "$n_prompts"); do
        ids="2"
        for j in $(seq 1 31); do ids="$ids, $(((i * 131 + j * 17) % 200 + 3))"; done
        echo "{\"id\": \"synthetic-$i\", \"prompt_token_ids\": [$ids]}"
    done >"$tmp/fixture_prompts.jsonl"
    for i in 1 2; do
        ctx="2"
        for j in $(seq 1 15); do ctx="$ctx, $(((i * 37 + j * 11) % 200 + 3))"; done
        echo "{\"context_token_ids\": [$ctx], \"target_token_ids\": [5, 9, 17, 33, 65, 129]}"
    done >"$tmp/fixture_ppl.jsonl"
    bench_model "fixture $(basename "$fixture")" "$fixture" "$tmp/fixture_prompts.jsonl" \
        "$tmp/fixture_ppl.jsonl"
else
    echo "no fixture model under tests/engine/fixtures: skipped" >&2
fi

# The shipped small model on the first PROMPTS prompts of its own tuning set.
tiny=models/gemma4-tiny
if [ -f "$tiny/config.json" ] && [ -f "$tiny/eval/prompts_tune.jsonl" ]; then
    # the first PROMPTS non-blank lines (awk reads to the end: no SIGPIPE under pipefail)
    awk -v n="$n_prompts" 'NF && c++ < n' "$tiny/eval/prompts_tune.jsonl" >"$tmp/tiny_prompts.jsonl"
    awk -v n="$n_prompts" 'NF && c++ < n' "$tiny/eval/ppl_tune.jsonl" >"$tmp/tiny_ppl.jsonl"
    bench_model "gemma4-tiny" "$tiny" "$tmp/tiny_prompts.jsonl" "$tmp/tiny_ppl.jsonl"
else
    echo "no shipped model at $tiny: skipped" >&2
fi

[ ${#rows[@]} -gt 0 ] || { echo "bench_engine_cpu: no model to benchmark" >&2; exit 1; }
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
mkdir -p "$(dirname "$out")"
{
    echo "# Engine on the CPU: tokens/s beside the bandwidth floor"
    echo
    echo "Written by \`$command_line\` on $(date -u '+%Y-%m-%d %H:%M UTC'),"
    echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), on $cpu,"
    echo "$(nproc) cores (membw used $bw_threads threads), load average before the run: $load"
    echo "(the machine is shared: other work running beside the benchmark shows there, and OpenMP"
    echo "threads that wait at barriers for a descheduled peer make multi-thread rows suffer most)."
    echo "Nice level of the run: $(nice). Single stream, greedy, $new_tokens new tokens"
    echo "per prompt, $n_prompts prompts, $warmup warm-up prompt(s) untimed (\`engine bench\`)."
    echo
    echo "Measured memory read bandwidth (bench/membw, best of 10 passes over ${MEMBW_MIB:-1024} MiB):"
    echo "**$bw GB/s**. Floor = bandwidth / weight bytes read per token (model_bytes_per_token)."
    echo
    echo "| model | threads | weights read / token | floor tok/s | tps (incl. prefill) | decode tok/s | decode share of floor | prefill tok/s | ppl pass tok/s | ppl |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    printf '%s\n' "${rows[@]}"
    echo
    echo "A share above 100 % means the weights fit in the CPU caches, so DRAM bandwidth is not"
    echo "what bounds that model; the floor is the figure that matters for models larger than the"
    echo "last-level cache. Per-token work beyond the weights (attention over the cache, the"
    echo "argmax, OpenMP fork/join) is what separates small models from the floor."
    echo
    echo "Raw results (the engine's JSON, one line per model):"
    echo
    echo '```'
    printf '%s\n' "${raws[@]}"
    echo '```'
} >"$out"
cat "$out"
