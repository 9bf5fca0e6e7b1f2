#!/usr/bin/env bash
# test_ncu_step_split.sh: bench/ncu_step_split.py on three real ncu captures of an E4B-sized
# decode step on an H200 (tests/tools/fixtures: two of a step whose attention ends in a merge
# kernel, "step A" and "step B", and one of a step whose attention is one cluster kernel a layer,
# "cluster"). The expected rows are those captures' own figures, summed by hand from the csv for
# norm_add_norm and the cluster step's o and attention. And its refusals: a missing file, a file
# that is not an ncu --csv capture, a capture without the time metric - each exits 2 naming the
# file.
set -uo pipefail
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
SPLIT=$ROOT/bench/ncu_step_split.py
FIX=$ROOT/tests/tools/fixtures
. "$ROOT/tests/tools/check.sh"

out=$(python3 "$SPLIT" "$FIX/ncu_lead3_call5.csv.gz"); rc=$?
check "step A exit status" "rc $rc" "rc 0"
check "step A step" "$out" "kernels in the step: 516; their isolated times add up to 4488.9 us"
check "step A norms" "$out" "| norm_add_norm_kernel | 126 | 500.9 | 3.98 |"
check "step A gate + up" "$out" "| gate + up | 42 | 1329.8 | 31.66 |"
check "step A q + k + v" "$out" "| q + k + v | 42 | 354.7 | 8.44 |"
check "step A head" "$out" "| head | 1 | 316.7 |"
check "step A per-layer" "$out" "| per-layer projection | 42 | 139.6 |"
[[ $out == *"other matrix-vector"* ]] && { echo "FAIL: step A: a product without a role"; fails=$((fails + 1)); }

out=$(python3 "$SPLIT" "$FIX/ncu_lead3_call3.csv.gz")
check "step B step" "$out" "their isolated times add up to 4979.0 us"
check "step B norms" "$out" "| norm_add_norm_kernel | 126 | 713.3 | 5.66 |"
check "step B down" "$out" "| down | 42 | 799.7 | 19.04 |"

# the cluster step: attention is one cluster kernel a layer (no merge kernel), and the product
# after it is still o (42 launches, 271744 ns summed by hand from the csv)
out=$(python3 "$SPLIT" "$FIX/ncu_s20_call5.csv.gz")
check "cluster step" "$out" "kernels in the step: 474; their isolated times add up to 4216.5 us"
check "cluster attention" "$out" "| attn_cluster_kernel | 42 | 325.9 | 7.76 |"
check "cluster o" "$out" "| o | 42 | 271.7 | 6.47 |"
check "cluster down" "$out" "| down | 42 | 733.0 | 17.45 |"
[[ $out == *"other matrix-vector"* ]] && { echo "FAIL: cluster: a product without a role"; fails=$((fails + 1)); }

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
refused "missing file" "rc 2: ncu_step_split: $tmp/missing.csv: No such file" python3 "$SPLIT" "$tmp/missing.csv"
printf 'hello\nnot a capture\n' > "$tmp/text.csv"
refused "not a capture" "rc 2: ncu_step_split: $tmp/text.csv: no ncu --csv kernel rows" python3 "$SPLIT" "$tmp/text.csv"
printf '"ID","Kernel Name","Grid Size","Metric Name","Metric Unit","Metric Value"\n"0","void k(float *)","(1, 1, 1)","dram__bytes_read.sum","byte","64"\n' > "$tmp/notime.csv"
refused "no time metric" "rc 2: ncu_step_split: $tmp/notime.csv: kernel k has no gpu__time_duration.sum" python3 "$SPLIT" "$tmp/notime.csv"

finish test_ncu_step_split
