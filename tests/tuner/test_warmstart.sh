# --warm-start: a study on "another GPU" begins with the earlier study's winner, then its
# lattice neighbours, then the earlier study's other feasible points, mapped by knob name
# and value onto the new space; the earlier trials are never counted as this study's; the
# queue is saved with the study, so a resume without the flag runs the same queue.
source "$TESTS_DIR/sweep_lib.sh"

# The earlier study: its winner is window 256 with 5 speculative tokens (ppl cap 2.42).
write_space a.yaml <<'YAML'
study: a10g
engine: {command: [@ENGINE@], timeout: 10}
objective: {metric: tps, direction: maximize}
constraints: [ppl <= 2.42]
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: 512, step: 128}
  NUM_SPECULATIVE_TOKENS: {type: int, min: 3, max: 7}
  CENTROID_TOP_K: {type: categorical, values: [32, 48]}
strategy: grid
verify: {top: 1, repeats: 1}
YAML
"$TUNER" sweep a.yaml >/dev/null 2>a.err || { cat a.err; fail "earlier study"; }
expect_contains out/a10g/manifest.json '"SLIDING_WINDOW":	"256"'
expect_contains out/a10g/manifest.json '"NUM_SPECULATIVE_TOKENS":	"5"'

# The new study: a finer window lattice, a keepset knob the earlier one lacked (its
# default, 0, is used), no CENTROID_TOP_K (ignored).
write_space b.yaml <<'YAML'
study: l4
engine: {command: [@ENGINE@], env: {SYNTH_SLOW_START: "0.03"}, timeout: 10}
objective: {metric: tps, direction: maximize}
constraints: [ppl <= 2.42]
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: 512, step: 32}
  NUM_SPECULATIVE_TOKENS: {type: int, min: 0, max: 8}
  LM_HEAD_KEEPSET: {type: categorical, values: [0, 8192, 16384], default: 0}
strategy: {name: sobol, seed: 2}
budget: {evaluations: 20}
verify: {top: 2, repeats: 1}
YAML
"$TUNER" sweep b.yaml --dry-run --warm-start out/a10g >dry.out || fail "dry run with --warm-start"
expect_contains dry.out "warm start: 13 points from out/a10g, first SLIDING_WINDOW=256,NUM_SPECULATIVE_TOKENS=5,LM_HEAD_KEEPSET=0"
[ ! -e out/l4 ] || fail "the dry run wrote a study"

"$TUNER" sweep b.yaml --warm-start out/a10g >/dev/null 2>b.err || { cat b.err; fail "warm-started study"; }
tr=out/l4/trials.jsonl
expect_contains b.err "warm start from out/a10g: 13 points first, beginning with the earlier winner SLIDING_WINDOW=256,NUM_SPECULATIVE_TOKENS=5,LM_HEAD_KEEPSET=0"
# The earlier winner first, then its neighbours on this lattice, in knob order.
points() { search_lines "$1" | grep -o '"point":{[^}]*}' | sed 's/"point"://; s/"SLIDING_WINDOW"://; s/"NUM_SPECULATIVE_TOKENS"://; s/"LM_HEAD_KEEPSET"://; s/"//g'; }
want='{256,5,0}
{224,5,0}
{288,5,0}
{256,4,0}
{256,6,0}
{256,5,8192}
{256,5,16384}'
[ "$(points $tr | head -7)" = "$want" ] || { points $tr | head -7; fail "the earlier winner and its neighbours do not come first"; }
[ "$(search_lines $tr | head -13 | json_field phase | sort -u)" = warm ] || fail "the first 13 trials are not the warm-start queue"
search_lines $tr | sed -n 14p | qgrep '"phase":"search"' || fail "the strategy does not take over after the queue"
# Trials 8..13: the earlier study's next feasible points, best first, those not queued yet
# (window 256 with 4 and 6 tokens are neighbours already).
[ "$(points $tr | sed -n 8,9p | tr '\n' ' ')" = "{256,3,0} {256,7,0} " ] ||
    fail "the earlier study's next best points do not follow the neighbours"
[ "$(points $tr | sort | uniq -d | wc -l)" -eq 0 ] || fail "a point was measured twice"
# The earlier trials are not this study's measurements.
[ "$(n_search $tr)" -eq 20 ] || fail "want 20 search trials (the budget), got $(n_search $tr)"
! grep -q '"CENTROID_TOP_K"' $tr || fail "an earlier trial leaked into the new journal"
expect_contains out/l4/warmstart.json '"source":	"out/a10g"'
"$TUNER" show l4 >show.out
[ "$(grep -c '(warm start)$' show.out)" -eq 13 ] || fail "show does not mark the 13 warm-start points"

# A manifest works as the source too, and knobs off the lattice are mapped with a note.
sed 's/study: l4/study: coarse/; s/min: 128, max: 512, step: 32/min: 130, max: 530, step: 50/' b.yaml >c.yaml
"$TUNER" sweep c.yaml --warm-start out/a10g/manifest.json >/dev/null 2>c.err || { cat c.err; fail "from a manifest"; }
expect_contains c.err "warm start: SLIDING_WINDOW=256 is not on this space's lattice; using 280"
expect_contains c.err "warm start: LM_HEAD_KEEPSET is not set in the earlier point; using 0"
search_lines out/coarse/trials.jsonl | head -1 | qgrep '"SLIDING_WINDOW":"280","NUM_SPECULATIVE_TOKENS":"5","LM_HEAD_KEEPSET":"0"' ||
    fail "the mapped winner is not first"

# kill -9 in the middle of the queue, then a resume without the flag: the same trials.
sed 's/study: l4/study: again/' b.yaml >d.yaml
sweep_bg d1.err d.yaml --warm-start out/a10g
stop_at out/again/trials.jsonl 3 20 KILL
"$TUNER" sweep d.yaml >/dev/null 2>d2.err || { cat d2.err; fail "resume of a warm-started study"; }
cmp -s <(points out/again/trials.jsonl) <(points $tr) || fail "the resumed study ran other points"
# The flag with another source, or on a study begun without it, is refused.
rc=0
"$TUNER" sweep d.yaml --warm-start out/coarse >/dev/null 2>e1.err || rc=$?
[ "$rc" -eq 1 ] || fail "switching the warm-start source: exit $rc, want 1"
expect_contains e1.err "study 'again' began with --warm-start out/a10g; it cannot switch to out/coarse"
rc=0
"$TUNER" sweep a.yaml --warm-start out/l4 >/dev/null 2>e2.err || rc=$?
[ "$rc" -eq 1 ] || fail "--warm-start on a study without one: exit $rc, want 1"
expect_contains e2.err "study 'a10g' already has"
expect_contains e2.err "--warm-start applies only when a study begins"

# Bad sources: a missing path, a file that is no manifest, a study with no winner.
rc=0
"$TUNER" sweep b.yaml --new --warm-start nowhere/manifest.json >/dev/null 2>f1.err || rc=$?
[ "$rc" -eq 1 ] || fail "missing source: exit $rc"
expect_contains f1.err "nowhere/manifest.json"
echo '{"env": {}}' >notmanifest.json
rc=0
"$TUNER" sweep b.yaml --new --warm-start notmanifest.json >/dev/null 2>f2.err || rc=$?
[ "$rc" -eq 1 ] || fail "not a manifest: exit $rc"
expect_contains f2.err "notmanifest.json: --warm-start needs a study folder or a manifest.json with a \"point\" object"
sed 's/study: a10g/study: hopeless/; s/ppl <= 2.42/ppl <= 1.0/' a.yaml >h.yaml
"$TUNER" sweep h.yaml >/dev/null 2>h.err && fail "an impossible study found a point"
rc=0
"$TUNER" sweep b.yaml --new --warm-start out/hopeless >/dev/null 2>f3.err || rc=$?
[ "$rc" -eq 1 ] || fail "source without a winner: exit $rc"
expect_contains f3.err "out/hopeless: no earlier winner to start from"
# A refused source leaves no study folder behind.
[ ! -e out/l4-2 ] || fail "a refused --warm-start created a study"
echo "ok"
