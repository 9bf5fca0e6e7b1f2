# The shipped search spaces (search_spaces/*.yaml): each one loads and `tuner sweep
# --dry-run` prints its plan and first proposals, runs nothing and writes nothing; the
# port example warm-starts from an earlier study; the default's data files exist and its
# keepset levels sit where the model card's coverage cliff says.
source "$TESTS_DIR/sweep_lib.sh"
: "${ROOT:?set ROOT to the repository}"
S=$ROOT/search_spaces

n=0
for f in "$S"/*.yaml; do
    name=$(basename "$f" .yaml)
    "$TUNER" sweep "$f" --dry-run --out "$T/out" >"$name.plan" 2>"$name.err" ||
        { cat "$name.err" "$name.plan"; fail "$name.yaml: dry run failed"; }
    expect_contains "$name.plan" "first proposals on an empty study:"
    expect_contains "$name.plan" "dry run: nothing was run and nothing was written"
    grep -qE '^ +1\. [A-Z_]+=' "$name.plan" || fail "$name.yaml: no proposal listed"
    [ ! -e "$T/out" ] || fail "$name.yaml: the dry run wrote $T/out"
    n=$((n + 1))
done
[ "$n" -ge 5 ] || fail "want at least 5 spaces (synthetic, default, e4b_gpu, record_vllm, port_l4), found $n"

# The embedded default: bayes over the four knobs, a relative ppl budget, holdout verification.
expect_contains default.plan "engine:     ../build/engine/engine bench ../models/gemma4-tiny --data data/gemma4-tiny-quick"
expect_contains default.plan "space:      5 knobs, 2700 points; strategy bayes"
expect_contains default.plan "constraint: ppl <= 1.05 * baseline"
expect_contains default.plan "on the holdout prompts"
expect_contains default.plan "baseline:   SLIDING_WINDOW=128,NUM_SPECULATIVE_TOKENS=0,CENTROID_TOP_K=2,LM_HEAD_KEEPSET=0"
# Its GPU form (run.sh's choice where a GPU is): the engine on the GPU, and the same knobs,
# constraint and verification as the default (only the budget and the engine line differ).
expect_contains default_gpu.plan "--device cuda"
expect_contains default_gpu.plan "space:      5 knobs, 2700 points; strategy bayes"
tail_of() { sed -n '/^constraints:/,$p' "$1" | grep -v '^budget:'; }
diff <(tail_of "$S/default.yaml") <(tail_of "$S/default_gpu.yaml") ||
    fail "default_gpu.yaml's knobs, constraint or verification differ from default.yaml's"
for s in tune holdout; do
    for k in prompts ppl; do
        [ -s "$S/data/gemma4-tiny-quick/${k}_$s.jsonl" ] || fail "default: no data/gemma4-tiny-quick/${k}_$s.jsonl"
        # the quick sets are the first lines of the model's own sets, unchanged
        head -n "$(wc -l <"$S/data/gemma4-tiny-quick/${k}_$s.jsonl")" "$ROOT/models/gemma4-tiny/eval/${k}_$s.jsonl" |
            cmp -s - "$S/data/gemma4-tiny-quick/${k}_$s.jsonl" || fail "default: ${k}_$s.jsonl is not a head of the model's set"
    done
done
# The keepset cliff of the quick ppl records (README of the model: keepset.txt by frequency):
# the highest frequency rank among the target tokens decides which keepset sizes stay finite.
if command -v python3 >/dev/null; then
    python3 - "$ROOT/models/gemma4-tiny/keepset.txt" "$S/data/gemma4-tiny-quick" <<'PY' || fail "default: keepset levels and coverage disagree"
import json, sys
ids = [int(l) for l in open(sys.argv[1]) if l.strip() and not l.startswith('#')]
rank = {t: i for i, t in enumerate(ids)}
for s in ('tune', 'holdout'):
    need = max(rank[t] for l in open(f'{sys.argv[2]}/ppl_{s}.jsonl') if l.strip()
               for t in json.loads(l)['target_token_ids']) + 1
    # 4096 and 5632 are meant to miss target tokens, 5824 and 6016 to cover them
    assert 5632 < need <= 5824, (s, need)
PY
fi

# The GPU spaces need the user's model folders, named by variables, not paths in the file.
expect_contains e4b_gpu.plan '"${GEMMA4_MODEL_DIR:?set GEMMA4_MODEL_DIR'
expect_contains e4b_gpu.plan '--assistant "${GEMMA4_ASSISTANT_DIR:?'
expect_contains e4b_gpu.plan "constraint: ppl <= 2.42"
expect_contains record_vllm.plan 'exec python serve.py'
# record_vllm reads its figures by regex from text: check the patterns on the documented lines
printf 'warming up\ntokens/s: 510.58\nperplexity: 2.3930\n' >harness.txt
write_space echo.yaml <<YAML
engine:
  command: [cat, $T/harness.txt]
  timeout: 10
  result:
    regex:
$(sed -n '/^    regex:/,/^[a-z]/p' "$S/record_vllm.yaml" | grep -E '^      (tps|ppl):')
objective: {metric: tps}
constraints: [ppl <= 2.42]
parameters:
  SLIDING_WINDOW: {type: int, min: 188, max: 192, step: 4}
strategy: grid
verify: {top: 1, repeats: 1}
YAML
"$TUNER" sweep echo.yaml >echo.json 2>echo.err || { cat echo.err; fail "record_vllm regexes do not read the harness lines"; }
tr -d '\t\n' <echo.json | qgrep '"median":{"tps":510.58,"ppl":2.393'

# The port example warm-starts from an earlier study with the same knobs (here a small
# synthetic one named e4b_gpu, as the e4b_gpu space would name it).
sed -n '/^parameters:/,/^strategy:/p' "$S/e4b_gpu.yaml" | grep -v '^strategy:' >params.yaml
write_space earlier.yaml <<YAML
study: e4b_gpu
engine: {command: [@ENGINE@], timeout: 10}
objective: {metric: tps}
constraints: [ppl <= 2.42]
$(cat params.yaml)
strategy: sobol
budget: {evaluations: 6}
verify: {top: 1, repeats: 1}
YAML
"$TUNER" sweep earlier.yaml >/dev/null 2>earlier.err || { cat earlier.err; fail "earlier study failed"; }
"$TUNER" sweep "$S/port_l4.yaml" --dry-run --warm-start out/e4b_gpu >port.plan 2>port.err ||
    { cat port.err; fail "port_l4 --warm-start dry run failed"; }
expect_contains port.plan "warm start: "
expect_contains port.plan "points from out/e4b_gpu, first "
[ ! -e out/e4b_l4 ] || fail "port dry run wrote its study"
rc=0
"$TUNER" sweep "$S/port_l4.yaml" --dry-run --warm-start out/nosuch >/dev/null 2>port2.err || rc=$?
[ "$rc" -ne 0 ] || fail "warm start from a missing study succeeded"
expect_contains port2.err "out/nosuch"

# A damaged copy of the default is refused with file, line and key.
sed 's/^strategy: .*/strategy: {name: annealing, seed: 1}/' "$S/default.yaml" >"$T/bad_default.yaml"
rc=0
"$TUNER" sweep "$T/bad_default.yaml" --dry-run >/dev/null 2>bad.err || rc=$?
[ "$rc" -eq 1 ] || fail "bad strategy: exit $rc, want 1"
qgrep -E "bad_default.yaml:[0-9]+: key 'strategy" bad.err || { cat bad.err; fail "bad strategy: message"; }
echo "test_search_spaces: ok"
