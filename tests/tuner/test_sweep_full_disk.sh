# A journal write that fails (here: a file-size limit, as a full disk would) stops the
# sweep with the file named and a non-zero exit; the trials already written stay whole
# (no torn line), and the study resumes from them once there is room again.
source "$TESTS_DIR/sweep_lib.sh"

write_space space.yaml <<'YAML'
study: full
engine: {command: [@ENGINE@], timeout: 10}
objective: {metric: tps, direction: maximize}
parameters:
  SLIDING_WINDOW: {type: int, min: 64, max: 4096, step: 64}
strategy: grid
YAML
rc=0
(ulimit -f 8 && exec "$TUNER" sweep space.yaml) >/dev/null 2>full.err || rc=$?
[ "$rc" -eq 1 ] || { cat full.err; fail "exit $rc on a full journal, want 1"; }
expect_contains full.err "cannot append a trial to out/full/trials.jsonl:"
expect_contains full.err "(the trials already in it are kept)"
tr=out/full/trials.jsonl
n=$(n_search $tr)
[ "$n" -ge 1 ] && [ "$n" -lt 64 ] || fail "$n trials before the limit"
[ "$(tail -c 1 $tr | od -An -c | tr -d ' ')" = '\n' ] || fail "the journal ends in a torn line"
[ ! -e out/full/manifest.json ] || fail "a manifest was written"
cp $tr before.jsonl

"$TUNER" sweep space.yaml >/dev/null 2>again.err || { cat again.err; fail "resume after the full disk"; }
expect_contains again.err "resuming study 'full': $n runs"
! grep -q "incomplete" again.err || fail "a torn line was left behind"
cmp -s before.jsonl <(head -n "$n" $tr) || fail "trials written before the failure changed"
[ "$(n_search $tr)" -eq 64 ] || fail "want 64 trials in the end"
[ "$(grep -o '"point":{[^}]*}' $tr | sort -u | wc -l)" -eq 64 ] || fail "a point was repeated"
echo "ok"
