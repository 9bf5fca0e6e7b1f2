#!/usr/bin/env bash
# test_trace_step.sh: bench/trace_step.py on a timeline made by hand (every figure worked out
# below) and on a real one (docs/gpu_logs/s29/call6: 64 E4B decode steps on the H200; its MLP
# kernels' 37.71 us and the norms' 272.8 us a step were recomputed from the csv apart from the
# script, as each launch's end minus the previous kernel's end), and its refusals: a missing
# file, a run that did not finish (no "# measured" line), a line that is not a kernel record -
# each exits 2 naming the file.
set -uo pipefail
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
TS=$ROOT/bench/trace_step.py
fails=0
check() { # description, command output, expected substring
  if [[ $2 != *"$3"* ]]; then echo "FAIL: $1: expected '$3' in:"; echo "$2" | head -30; fails=$((fails + 1)); fi
}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# Two steps of three kernels (ns). Step 1: a 1000-3000, b 2500-4000 (adds 1000, lead 500),
# c 3000-4500 (adds 500, lead 1000); span 3500. Step 2: a 10000-12000, b 11000-12500 (adds 500,
# lead 1000), c 11500-14000 (adds 1500, lead 1000); span 4000. The host gap: 10000 - 4500.
# A kernel before the window (at 0) and one after it (at 20000) are not counted.
cat > "$tmp/t.csv" <<'CSV'
0,500,_Z1ePf,1,32,0
1000,3000,_Z1aPf,4,128,0
2500,4000,_Z1bPf,8,256,0
3000,4500,_Z10mlp_kernelILi1ELi16EEvPf,132,352,0
10000,12000,_Z1aPf,4,128,0
11000,12500,_Z1bPf,8,256,0
11500,14000,_Z10mlp_kernelILi1ELi16EEvPf,132,352,0
20000,21000,_Z1aPf,4,128,0
# measured 900 15000 2
CSV
out=$(python3 "$TS" "$tmp/t.csv" 3); rc=$?
check "hand exit status" "rc $rc" "rc 0"
check "hand steps" "$out" "2 steps, 3 kernels a step (the first: a)"
check "hand span" "$out" "step span (first start to last end): 3.8 us mean, 3.5 - 4.0; between steps (host): 5.5 us"
# a: adds = its duration (2.0, 2.0), lead 0; b: adds 1.0 / 0.5, lead 0.5 / 1.0; mlp: 0.5 / 1.5
check "hand a" "$out" "a g4 b128                                                     1.0     2.00     0.00     2.00        2.0  53.3%"
check "hand b" "$out" "b g8 b256                                                     1.0     1.50     0.75     0.75        0.8  20.0%"
check "hand mlp" "$out" "mlp_kernel<1,16> g132 b352                                    1.0     2.00     1.00     1.00        1.0  26.7%"
check "hand listing" "$out" "kernels 1 .. 2 of step 1 (us from the step's first start):"
check "hand listing b" "$out" "     1 b                                        g8      b256   start      1.0  dur   1.50  lead   1.00  adds   0.50"
check "hand listing mlp" "$out" "     2 mlp_kernel<1,16>                         g132    b352   start      1.5  dur   2.50  lead   1.00  adds   1.50"

# One step: x, then two layers m, r (m launched twice, so the step is cut at each m; x before the
# first m is in no layer). m 500-3000 after x's end 1000: adds 2.0, lead 0.5; r 2800-3500: adds
# 0.5, lead 0.2; m 3000-6000: adds 2.5, lead 0.5; r 5000-6400: adds 0.4, lead 1.0. The kind
# (m, r): 2 a step, (2.5 + 2.9) / 2 = 2.70 us each; m adds 2.25 lead 0.50, r adds 0.45 lead 0.60.
cat > "$tmp/l.csv" <<'CSV'
0,1000,_Z1xPf,1,32,0
500,3000,_Z1mPf,132,352,0
2800,3500,_Z1rPf,80,256,0
3000,6000,_Z1mPf,132,352,0
5000,6400,_Z1rPf,80,256,0
# measured 0 7000 1
CSV
out=$(python3 "$TS" "$tmp/l.csv")
check "layers anchor" "$out" "layers, from each m to the next (us; kinds seen more than once a step):"
check "layers kind" "$out" "  2 a step, 2.70 us each:"
check "layers m" "$out" "      0 m g132 b352                                          adds    2.25  lead    0.50"
check "layers r" "$out" "      1 r g80 b256                                           adds    0.45  lead    0.60"

out=$(python3 "$TS" "$ROOT/docs/gpu_logs/s29/call6/trace.csv.gz"); rc=$?
check "s29 exit status" "rc $rc" "rc 0"
check "s29 steps" "$out" "64 steps, 474 kernels a step (the first: embed_kernel)"
check "s29 span" "$out" "step span (first start to last end): 3068.5 us mean"
check "s29 mlp" "$out" "mlp_kernel<1,16> g132 b352                                   42.0    42.83     5.12    37.71     1583.8  51.6%"
check "s29 norms" "$out" "norm_add_norm_kernel g1 b640                                126.0    18.26    16.10     2.16      272.8   8.9%"
check "s29 sliding layers" "$out" "  19 a step, 64.42 us each:"

err=$(python3 "$TS" "$tmp/missing.csv" 2>&1); rc=$?
check "missing file" "rc $rc: $err" "rc 2: trace_step: $tmp/missing.csv: No such file"
head -8 "$tmp/t.csv" > "$tmp/unfinished.csv"
err=$(python3 "$TS" "$tmp/unfinished.csv" 2>&1); rc=$?
check "unfinished run" "rc $rc: $err" "rc 2: trace_step: $tmp/unfinished.csv: no '# measured' line"
printf '1000,3000,_Z1aPf,4,128,0\nhello\n# measured 900 15000 1\n' > "$tmp/bad.csv"
err=$(python3 "$TS" "$tmp/bad.csv" 2>&1); rc=$?
check "bad line" "rc $rc: $err" "rc 2: trace_step: $tmp/bad.csv:2: not a kernel record"
printf '# measured 900 15000 1\n' > "$tmp/empty.csv"
err=$(python3 "$TS" "$tmp/empty.csv" 2>&1); rc=$?
check "no kernels" "rc $rc: $err" "rc 2: trace_step: $tmp/empty.csv: no kernels in the measured window"

[[ $fails == 0 ]] && echo "test_trace_step: all passed" || { echo "test_trace_step: $fails failure(s)"; exit 1; }
