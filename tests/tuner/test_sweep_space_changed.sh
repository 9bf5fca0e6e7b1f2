# Resuming with a changed space is refused with a message naming both files and --new;
# --new starts a fresh study beside the old one; an unchanged space resumes.
source "$TESTS_DIR/sweep_lib.sh"

space() { # $1 = max window
    write_space space.yaml <<YAML
study: demo
engine: {command: [@ENGINE@], timeout: 10}
objective: {metric: tps, direction: maximize}
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: $1, step: 128}
strategy: grid
YAML
}
space 384
"$TUNER" sweep space.yaml >/dev/null 2>first.err || { cat first.err; fail "first sweep"; }
[ "$(n_search out/demo/trials.jsonl)" -eq 3 ] || fail "want 3 trials"
# Comments and formatting do not change the space; the same space resumes.
echo "# a comment" >>space.yaml
"$TUNER" sweep space.yaml >/dev/null 2>same.err || { cat same.err; fail "unchanged space refused"; }
expect_contains same.err "resuming study 'demo'"

space 512
"$TUNER" sweep space.yaml --dry-run >dry.out || fail "dry run"
expect_contains dry.out "resume:     refused: the space changed since the study began (pass --new)"
rc=0
"$TUNER" sweep space.yaml >/dev/null 2>changed.err || rc=$?
[ "$rc" -eq 1 ] || fail "changed space: exit $rc, want 1"
expect_contains changed.err "the space space.yaml has changed since study 'demo' began"
expect_contains changed.err "out/demo/space.json"
expect_contains changed.err "Pass --new to start a new study (it will be 'demo-2')"
[ "$(n_search out/demo/trials.jsonl)" -eq 3 ] || fail "the refused sweep touched the old study"

"$TUNER" sweep space.yaml --new >/dev/null 2>new.err || { cat new.err; fail "--new failed"; }
[ "$(n_search out/demo-2/trials.jsonl)" -eq 4 ] || fail "new study: want 4 trials"
[ "$(n_search out/demo/trials.jsonl)" -eq 3 ] || fail "--new touched the old study"
cmp -s out/demo-2/space.json out/demo/space.json && fail "new study has the old snapshot"
# --new again: demo-3; the old studies stay.
"$TUNER" sweep space.yaml --new >/dev/null 2>new3.err || fail "second --new failed"
[ -f out/demo-3/manifest.json ] || fail "no demo-3"
# A folder that is not a study is not taken over.
mkdir -p out/other && echo '{}' >out/other/trials.jsonl
rc=0
"$TUNER" sweep space.yaml --study other >/dev/null 2>other.err || rc=$?
[ "$rc" -eq 1 ] || fail "a non-study folder was used"
expect_contains other.err "out/other has trials but no space.hash"
echo "ok"
