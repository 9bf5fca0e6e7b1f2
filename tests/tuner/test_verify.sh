# Held-out verification after the search (tuner/verify.h).
# Without a baseline: the top candidates are re-run on TUNER_PROMPT_SET=holdout; a candidate
# whose held-out figures break the budget is dropped and the next of the ranking takes its
# place; a speed that does not reproduce is warned about; no survivor means no manifest
# (exit 3).
# With a baseline: runs alternate baseline, candidate, baseline, candidate (the candidates'
# order rotated each round); a candidate wins only when the t interval of its speed-up over
# the baseline lies above 1; pairs are added until the interval is narrow enough or the cap
# is reached; when no setting is measurably faster the manifest is the baseline's (exit 0);
# a candidate whose held-out ppl is infinite is dropped and the ranking is followed down
# (diverse candidates first); relative bounds use the baseline re-run on the same prompts; a
# verification killed half-way resumes without repeating finished runs or breaking pairs.
source "$TESTS_DIR/sweep_lib.sh"

write_space space.yaml <<'YAML'
study: ver
engine: {command: [@ENGINE@], timeout: 10}
objective: {metric: tps, direction: maximize}
constraints: [ppl <= 2.42]
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: 512, step: 64}
strategy: grid
YAML
# Measured on the tuning prompts the best feasible window is 256 (ppl 2.415); 192 breaks
# the cap. Window 256 is fragile: on the held-out prompts its ppl is 0.2 higher.
SYNTH_HOLDOUT_PPL_WHEN=SLIDING_WINDOW=256 "$TUNER" sweep space.yaml >frag.out 2>frag.err ||
    { cat frag.err; fail "fragile sweep"; }
tr=out/ver/trials.jsonl
m=out/ver/manifest.json
[ "$(verify_lines $tr | wc -l)" -eq 12 ] ||
    fail "want 4 candidates x 3 verification runs (the dropped one replaced by the next)"
verify_lines $tr | qgrep -v '"prompt_set":"holdout"' && fail "a verification run was not on the holdout prompts"
[ "$(verify_lines $tr | json_field prompt_set | sort -u | tr '\n' ' ')" = "holdout " ] ||
    fail "the engine did not see TUNER_PROMPT_SET=holdout"
# The candidates are the top 3 measured: 256, 320, 384; 256 is dropped, so 448 follows.
[ "$(verify_lines $tr | grep -o '"SLIDING_WINDOW":"[0-9]*"' | sort -u | tr '\n' ' ')" = \
    '"SLIDING_WINDOW":"256" "SLIDING_WINDOW":"320" "SLIDING_WINDOW":"384" "SLIDING_WINDOW":"448" ' ] ||
    fail "wrong candidates"
w=$(eval "$("$TUNER" env $m)" && echo "$SLIDING_WINDOW")
[ "$w" = 320 ] || fail "manifest window $w, want 320 (256 breaks the cap on held-out prompts)"
expect_contains frag.err "warning: candidate 1 (SLIDING_WINDOW=256) dropped by verification on the holdout prompts: verified ppl 2.615 against bound 2.42"
expect_contains $m '"dropped":	"verified ppl 2.615 against bound 2.42 (ppl <= 2.42)"'
expect_contains $m '"warnings":	["candidate 1 (SLIDING_WINDOW=256) dropped'
# Measured and verified figures of the winner, the gap, the re-checked constraint.
mm=$(tr -d '\n\t ' <$m)
echo "$mm" | qgrep '"verified":{"prompt_set":"holdout","runs":3,"runs_with_result":3,"median":{"tps":' ||
    fail "no verified block"
med=$(verify_lines $tr | grep '"SLIDING_WINDOW":"320"' | json_field tps | sort -g | sed -n 2p)
got=$(echo "$mm" | grep -o '"objective":{[^}]*}' | json_field verified_median)
awk -v a="$got" -v b="$med" 'BEGIN { d = a - b; exit !(d < 1e-9 && d > -1e-9) }' ||
    fail "verified median $got, want $med"
echo "$mm" | grep -o '"gap":{[^}]*}' | qgrep '"tps":0,"ppl":0' || fail "gap of a reproducing point"
# tuner show: the verification section.
"$TUNER" show ver >show.out
expect_contains show.out "verification on the holdout prompts: 12 runs of 4 points, 3 still feasible"
expect_contains show.out "breaks: ppl 2.615 > bound 2.42"
expect_contains show.out "manifest out/ver/manifest.json: SLIDING_WINDOW=320"

# A speed that does not reproduce: a warning beyond the tolerance (5 % by default)...
SYNTH_HOLDOUT_TPS_SCALE=0.9 "$TUNER" sweep space.yaml --study slow >/dev/null 2>slow.err ||
    { cat slow.err; fail "slow sweep"; }
expect_contains slow.err "warning: tps of the winner SLIDING_WINDOW=256 does not reproduce on the holdout prompts"
expect_contains slow.err "gap -10.0 % exceeds the tolerance of 5.0 %"
expect_contains out/slow/manifest.json '"warnings":	["tps of the winner SLIDING_WINDOW=256 does not reproduce'
tr -d '\n\t ' <out/slow/manifest.json | grep -o '"gap":{[^}]*}' | qgrep '"tps":-0.0999999' ||
    fail "gap of -10 % not recorded"
# ... and none within it (tolerance from the space file).
sed 's/^strategy: grid$/strategy: grid\nverify: {tolerance: 0.15}/' space.yaml >tol.yaml
SYNTH_HOLDOUT_TPS_SCALE=0.9 "$TUNER" sweep tol.yaml --study tol >/dev/null 2>tol.err ||
    { cat tol.err; fail "tolerant sweep"; }
! grep -q "does not reproduce" tol.err || fail "warned within the tolerance"
expect_contains out/tol/manifest.json '"warnings":	[]'
expect_contains out/tol/manifest.json '"tolerance":	0.15'

# No candidate survives: no manifest, a clear message, exit 3.
rc=0
SYNTH_HOLDOUT_PPL_WHEN=always "$TUNER" sweep space.yaml --study none >none.out 2>none.err || rc=$?
[ "$rc" -eq 3 ] || { cat none.err; fail "exit $rc when nothing survives verification, want 3"; }
expect_contains none.err "no candidate survived verification: 5 of the 5 candidates tried were dropped on the holdout prompts"
[ ! -e out/none/manifest.json ] || fail "a manifest was written without a verified point"
[ ! -s none.out ] || fail "something was printed on stdout"

# Paired runs with a baseline, and relative bounds: the baseline is re-run on the held-out
# prompts between the candidates, and the bound is relative to its held-out ppl. Every ppl
# is 0.2 higher there; 256 still passes. Without noise each interval has width 0, so each
# candidate stops at the minimum of 2 pairs.
write_space rel.yaml <<'YAML'
study: rel
engine: {command: [@ENGINE@], timeout: 10}
objective: {metric: tps, direction: maximize}
constraints: [ppl <= 1.05 * baseline]
baseline: {SLIDING_WINDOW: 512}
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: 512, step: 64}
strategy: grid
verify: {top: 2, repeats: 1}
YAML
SYNTH_HOLDOUT_PPL_WHEN=always "$TUNER" sweep rel.yaml >/dev/null 2>rel.err || { cat rel.err; fail "relative sweep"; }
tr=out/rel/trials.jsonl
[ "$(search_lines $tr | grep -c '"phase":"baseline"')" -eq 3 ] || fail "the baseline was not run 3 times for the noise"
expect_contains rel.err "noise: tps of the baseline over 3 runs: relative sd 0.0 %"
# baseline, 256, baseline, 320 | baseline, 320, baseline, 256 (the second round rotated) |
# the closing baseline run
[ "$(verify_lines $tr | grep -o '"SLIDING_WINDOW":"[0-9]*"' | tr -dc '0-9\n' | tr '\n' ' ')" = \
    "512 256 512 320 512 320 512 256 512 " ] || fail "verification runs are not baseline/candidate pairs in rotated order"
w=$(eval "$("$TUNER" env out/rel/manifest.json)" && echo "$SLIDING_WINDOW")
[ "$w" = 256 ] || fail "relative: manifest window $w, want 256"
tr -d '\n\t ' <out/rel/manifest.json | qgrep '"constraints":\[{"text":"ppl<=1.05\*baseline","bound":2.625,"verified":2.615}\]' ||
    fail "verified bound not relative to the baseline's held-out ppl"
expect_contains out/rel/manifest.json '"summary":	"1.50x [1.50, 1.50] over the baseline on the holdout prompts, 2 pairs"'
expect_contains out/rel/manifest.json '"outcome":	"winner"'
tr -d '\n\t ' <out/rel/manifest.json | qgrep '"speedup":{"estimate":1.5[0-9]*,"low":1.5[0-9]*,"high":1.5[0-9]*,"confidence":0.95,"confidence_each":0.975,"pairs":2,' ||
    fail "speed-up not recorded in the manifest"
expect_contains rel.err "best: tps = "
expect_contains rel.err "(1.50x [1.50, 1.50] over the baseline on the holdout prompts, 2 pairs;"
"$TUNER" show rel >relshow.out
expect_contains relshow.out "answer: 1.50x [1.50, 1.50] over the baseline on the holdout prompts, 2 pairs"

# No setting measurably faster: on the held-out prompts every candidate is much slower than
# the baseline. The manifest is the baseline's, exit 0, with a message saying so.
slow='SLIDING_WINDOW=128|SLIDING_WINDOW=192|SLIDING_WINDOW=256|SLIDING_WINDOW=320|SLIDING_WINDOW=384|SLIDING_WINDOW=448'
rc=0
SYNTH_HOLDOUT_SLOW_WHEN=$slow SYNTH_HOLDOUT_SLOW_SCALE=0.5 "$TUNER" sweep rel.yaml --study base \
    >base.out 2>base.err || rc=$?
[ "$rc" -eq 0 ] || { cat base.err; fail "exit $rc when the baseline is the answer, want 0"; }
w=$(eval "$("$TUNER" env out/base/manifest.json)" && echo "$SLIDING_WINDOW")
[ "$w" = 512 ] || fail "baseline answer: manifest window $w, want 512"
expect_contains base.err "no setting was measurably faster than the baseline: the manifest is the baseline's"
expect_contains out/base/manifest.json '"outcome":	"baseline"'
expect_contains out/base/manifest.json '"verdict":	"not measurably faster"'
qgrep '"summary":	"the baseline: no setting was measurably faster on the holdout prompts at 95 % confidence' out/base/manifest.json ||
    fail "no baseline summary"
[ -s base.out ] || fail "the baseline's manifest was not printed on stdout"

# Noise: pairs are added past the minimum until the interval is narrow or the cap is reached.
# 256 is 1.5x faster than the baseline, with 5 % noise independent from run to run; a
# precision of 0.001 is never reached.
sed 's/^verify: .*/verify: {top: 1, repeats: 3, max_repeats: 6, precision: 0.001}/' rel.yaml >noisy.yaml
rc=0
SYNTH_MIXED_NOISE=0.05 SYNTH_HOLDOUT_SLOW_WHEN=SLIDING_WINDOW=128 SYNTH_HOLDOUT_SLOW_SCALE=0.2 \
    "$TUNER" sweep noisy.yaml --study noisy >/dev/null 2>noisy.err || rc=$?
[ "$rc" -eq 0 ] || { cat noisy.err; fail "noisy sweep: exit $rc"; }
tr=out/noisy/trials.jsonl
n=$(verify_lines $tr | grep -vc '"SLIDING_WINDOW":"512"' || true)
[ "$n" -eq 6 ] || fail "the candidate got $n runs, want the cap of 6 (precision 0.001 is never reached)"
[ "$(verify_lines $tr | grep -c '"SLIDING_WINDOW":"512"')" -eq 7 ] ||
    fail "want a baseline run before each candidate run and a closing one"
# The answer is never slower than the baseline: a winner's interval lies above 1.
if grep -q '"outcome":	"winner"' out/noisy/manifest.json; then
    low=$(tr -d '\n\t ' <out/noisy/manifest.json | grep -o '"speedup":{"estimate":[^}]*}' | head -1 | json_field low)
    awk -v l="$low" 'BEGIN { exit !(l > 1) }' || fail "a winner whose interval reaches below 1 ($low)"
fi

# Only the baseline meets the budget: it is the answer, without held-out runs.
sed 's/^constraints: .*/constraints: [ppl <= 1.0 * baseline]/' rel.yaml >only.yaml
rc=0
"$TUNER" sweep only.yaml --study only >/dev/null 2>only.err || rc=$?
[ "$rc" -eq 0 ] || { cat only.err; fail "only the baseline feasible: exit $rc, want 0"; }
[ "$(verify_lines out/only/trials.jsonl | wc -l)" -eq 0 ] || fail "verification ran without candidates"
expect_contains out/only/manifest.json '"summary":	"the baseline: no other point met every constraint in the search"'
expect_contains out/only/manifest.json '"verified":	null'

# A noisy machine: the noise is measured from the baseline's runs, warned about, and a point
# that challenges the best gets more runs (repeats + 2).
rc=0
SYNTH_MIXED_NOISE=0.3 "$TUNER" sweep rel.yaml --study loud >/dev/null 2>loud.err || rc=$?
[ "$rc" -eq 0 ] || { cat loud.err; fail "loud sweep: exit $rc"; }
expect_contains loud.err "warning: the measurements are noisy (relative sd"
most=$(search_lines out/loud/trials.jsonl | grep -v '"phase":"baseline"' | grep -o '"point":{[^}]*}' |
    sort | uniq -c | sort -rn | head -1 | awk '{print $1}')
[ "$most" -eq 3 ] || fail "no promising point got 3 runs on a noisy machine (at most $most)"
tr -d '\n\t ' <out/loud/manifest.json | qgrep '"noise":0\.[0-9]' || fail "no noise in the manifest"

# Dropped candidates: the keepset 8192 reports an infinite ppl on the held-out prompts. The
# candidates differ in two knobs (diverse), and the ranking is followed down past the
# dropped one until top candidates survive.
write_space keep.yaml <<'YAML'
study: keep
engine: {command: [@ENGINE@], timeout: 10}
objective: {metric: tps, direction: maximize}
constraints: [ppl <= 1.10 * baseline]
baseline: {SLIDING_WINDOW: 512, LM_HEAD_KEEPSET: 0}
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: 512, step: 64}
  LM_HEAD_KEEPSET: {type: categorical, values: [0, 8192, 16384]}
strategy: grid
verify: {top: 2, repeats: 2}
YAML
SYNTH_HOLDOUT_NULLPPL_WHEN=LM_HEAD_KEEPSET=8192 "$TUNER" sweep keep.yaml >/dev/null 2>keep.err ||
    { cat keep.err; fail "keepset sweep"; }
tr=out/keep/trials.jsonl
cands=$(verify_lines $tr | grep -v '"SLIDING_WINDOW":"512","LM_HEAD_KEEPSET":"0"' |
    grep -o '"point":{[^}]*}' | awk '!seen[$0]++' | tr -dc '0-9,\n' | tr '\n' ' ')
[ "$cands" = "128,8192 192,16384 256,0 " ] || fail "candidates tried: $cands (want the best, then ones differing in two knobs, then the next after the drop)"
expect_contains keep.err "warning: candidate 1 (SLIDING_WINDOW=128,LM_HEAD_KEEPSET=8192) dropped by verification on the holdout prompts: a metric is infinite on the holdout prompts: ppl is infinite: keepset misses target tokens"
[ "$(verify_lines $tr | grep -c '"LM_HEAD_KEEPSET":"8192"')" -eq 1 ] || fail "an infinite candidate was run again"
eval "$("$TUNER" env out/keep/manifest.json)"
[ "$SLIDING_WINDOW,$LM_HEAD_KEEPSET" = "192,16384" ] || fail "keepset: manifest $SLIDING_WINDOW,$LM_HEAD_KEEPSET, want 192,16384"
unset SLIDING_WINDOW LM_HEAD_KEEPSET

# kill -9 during the verification, then a resume: finished verification runs are kept and
# the pairs go on where they stopped.
write_space slowv.yaml <<'YAML'
study: slowv
engine: {command: [@ENGINE@], env: {SYNTH_SLOW_START: "0.15"}, timeout: 10}
objective: {metric: tps, direction: maximize}
baseline: {SLIDING_WINDOW: 512}
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: 512, step: 128}
strategy: grid
verify: {top: 2, repeats: 3}
YAML
export SYNTH_CALLS=$T/calls
sweep_bg k1.err slowv.yaml
tr=out/slowv/trials.jsonl
stop_at $tr 9 30 KILL
n_before=$(wc -l <$tr)
[ "$n_before" -lt 19 ] || fail "the study finished before it was killed"
cp $tr before.jsonl
"$TUNER" sweep slowv.yaml >/dev/null 2>k2.err || { cat k2.err; fail "resume of the verification"; }
cmp -s before.jsonl <(head -n "$n_before" $tr) || fail "lines written before the kill changed"
# the noise is rebuilt from the journal's baseline runs (and handed to the strategy again)
expect_contains k2.err "noise: tps of the baseline over 3 runs: relative sd 0.0 %"
[ "$(verify_lines $tr | wc -l)" -eq 13 ] ||
    fail "want 2 candidates x 3 pairs and a closing baseline run = 13 verification runs after the resume"
cmp -s <(json_field id <$tr) <(seq 1 19) || fail "trial ids are not 1..19"
[ "$(verify_lines $tr | grep -o '"SLIDING_WINDOW":"[0-9]*"' | tr -dc '0-9\n' | awk 'NR % 2' | sort -u)" = 512 ] ||
    fail "the pairs broke across the resume"
held=$(grep -c ' holdout$' calls)
[ "$held" -ge 13 ] && [ "$held" -le 14 ] || fail "the engine ran $held times on held-out prompts for 13 runs"
# A rerun of the finished study runs nothing and writes the same pick.
"$TUNER" sweep slowv.yaml >/dev/null 2>k3.err || { cat k3.err; fail "rerun"; }
[ "$(wc -l <$tr)" -eq 19 ] || fail "rerun added trials"
echo "ok"
