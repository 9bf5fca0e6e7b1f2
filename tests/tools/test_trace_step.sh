#!/usr/bin/env bash
# test_trace_step.sh: bench/trace_step.py on timelines made by hand (every figure worked out
# below), and its refusals: a missing file, a run that did not finish (no "# measured" line), a
# line that is not a kernel record - each exits 2 naming the file. And --diff, on hand-made
# timelines.
set -uo pipefail
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
TS=$ROOT/bench/trace_step.py
. "$ROOT/tests/tools/check.sh"
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

# --diff: A is l.csv above; B the same kernels with m 500-3200 (adds 2.2, lead 0.5), r 3000-3700
# (adds 0.5, lead 0.2), m 3500-6500 (adds 2.8, lead 0.2), r 5500-6600 (adds 0.1, lead 1.0); span
# 6.6 against 6.4. Adds a step: m 4.5 -> 5.0, r 0.9 -> 0.6, x 1.0 both. The kind (m, r): A 2.70 us
# (m 2.25 lead 0.50, r 0.45 lead 0.60), B 2.80 (m 2.50 lead 0.35, r 0.30 lead 0.60).
cat > "$tmp/lb.csv" <<'CSV'
0,1000,_Z1xPf,1,32,0
500,3200,_Z1mPf,132,352,0
3000,3700,_Z1rPf,80,256,0
3500,6500,_Z1mPf,132,352,0
5500,6600,_Z1rPf,80,256,0
# measured 0 7000 1
CSV
out=$(python3 "$TS" --diff "$tmp/l.csv" "$tmp/lb.csv"); rc=$?
check "diff exit status" "rc $rc" "rc 0"
check "diff span" "$out" "step span, us: A 6.4  B 6.6  B - A +0.2"
check "diff m" "$out" "m g132 b352                                                      4.5       5.0      +0.5"
check "diff r" "$out" "r g80 b256                                                       0.9       0.6      -0.3"
check "diff x" "$out" "x g1 b32                                                         1.0       1.0      +0.0"
check "diff order" "$(echo "$out" | grep -E '^(m|r|x) g' | cut -c1-1 | tr -d '\n')" "mrx"
check "diff kind" "$out" "layers, 2 a step: A 2.70 us, B 2.80 us, B - A +0.10 (adds; lead in brackets)"
check "diff kind m" "$out" "      0 m g132 b352                                  A   2.25 ( 0.50)  B   2.50 ( 0.35)  B - A  +0.25"
check "diff kind r" "$out" "      1 r g80 b256                                   A   0.45 ( 0.60)  B   0.30 ( 0.60)  B - A  -0.15"
# the same with r renamed s in B: the kinds still pair (same count, same length), both names shown
sed 's/_Z1rPf/_Z1sPf/' "$tmp/lb.csv" > "$tmp/ls.csv"
out=$(python3 "$TS" --diff "$tmp/l.csv" "$tmp/ls.csv")
check "diff renamed" "$out" "      1 r g80 b256 | s g80 b256                      A   0.45 ( 0.60)  B   0.30 ( 0.60)  B - A  -0.15"
check "diff only in B" "$out" "s g80 b256                                                       0.0       0.6      +0.6"
# a kind that B does not have (its layers are m, r, q: three kernels) is said so
cat > "$tmp/lq.csv" <<'CSV'
0,1000,_Z1xPf,1,32,0
500,3000,_Z1mPf,132,352,0
2800,3500,_Z1rPf,80,256,0
3400,3600,_Z1qPf,1,32,0
3500,6000,_Z1mPf,132,352,0
5000,6400,_Z1rPf,80,256,0
6300,6500,_Z1qPf,1,32,0
# measured 0 7000 1
CSV
out=$(python3 "$TS" --diff "$tmp/l.csv" "$tmp/lq.csv")
check "diff kind not in B" "$out" "layer kind of A (2 a step, 2 kernels): not in B"
check "diff q only in B" "$out" "q g1 b32                                                         0.0       0.2      +0.2"
refused "diff one file" "rc 2: trace_step.py:" python3 "$TS" --diff "$tmp/l.csv"
refused "diff missing B" "rc 2: trace_step: $tmp/missing.csv: No such file" python3 "$TS" --diff "$tmp/l.csv" "$tmp/missing.csv"

refused "missing file" "rc 2: trace_step: $tmp/missing.csv: No such file" python3 "$TS" "$tmp/missing.csv"
head -8 "$tmp/t.csv" > "$tmp/unfinished.csv"
refused "unfinished run" "rc 2: trace_step: $tmp/unfinished.csv: no '# measured' line" python3 "$TS" "$tmp/unfinished.csv"
printf '1000,3000,_Z1aPf,4,128,0\nhello\n# measured 900 15000 1\n' > "$tmp/bad.csv"
refused "bad line" "rc 2: trace_step: $tmp/bad.csv:2: not a kernel record" python3 "$TS" "$tmp/bad.csv"
printf '# measured 900 15000 1\n' > "$tmp/empty.csv"
refused "no kernels" "rc 2: trace_step: $tmp/empty.csv: no kernels in the measured window" python3 "$TS" "$tmp/empty.csv"

finish test_trace_step
