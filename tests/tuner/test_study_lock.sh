# One sweep at a time per study: two sweeps starting the same fresh study do not race on
# creating it (one runs, the other is refused naming the study and the first one's pid); a
# second sweep of a running study is refused the same way; a crash releases the lock; and a
# journal that holds a trial id twice is reported on resume instead of being taken as is.
source "$TESTS_DIR/sweep_lib.sh"

write_space space.yaml <<'YAML'
engine: {command: [@ENGINE@], env: {SYNTH_SLOW_START: "0.3"}, timeout: 20}
objective: {metric: tps, direction: maximize}
parameters:
  SLIDING_WINDOW: {type: int, min: 256, max: 512, step: 256}
strategy: grid
verify: {top: 1, repeats: 1}
YAML

# Two sweeps at once on a fresh study, several times over.
for i in 1 2 3 4 5; do
    "$TUNER" sweep space.yaml --study t$i >a$i.out 2>a$i.err &
    pa=$!
    "$TUNER" sweep space.yaml --study t$i >b$i.out 2>b$i.err &
    pb=$!
    ra=0 rb=0
    wait $pa || ra=$?
    wait $pb || rb=$?
    cat a$i.err b$i.err >both$i.err
    if grep -q "cannot write" both$i.err; then cat both$i.err; fail "round $i: the two sweeps raced on the study folder"; fi
    [ $((ra == 0)) -ne $((rb == 0)) ] || { cat both$i.err; fail "round $i: want one sweep to run and one refused (exits $ra, $rb)"; }
    if [ $ra -eq 0 ]; then loser=b$i.err winner=$pa lrc=$rb; else loser=a$i.err winner=$pb lrc=$ra; fi
    [ "$lrc" -eq 1 ] || fail "round $i: the refused sweep exited $lrc"
    expect_contains $loser "study 't$i' is in use by another sweep (pid $winner, lock "
    [ "$(n_search out/t$i/trials.jsonl)" -eq 2 ] || fail "round $i: want 2 search trials"
done

# A second sweep of a running study is refused; after kill -9 of the first, a resume works.
SYNTH_HANG_WHEN=always sweep_bg first.err space.yaml --study held
first=$pid
for ((k = 0; k < 100; k++)); do [ -s out/held/lock ] && break; sleep 0.05; done
rc=0
"$TUNER" sweep space.yaml --study held >/dev/null 2>second.err || rc=$?
[ "$rc" -eq 1 ] || { cat second.err; fail "second sweep of a held study: exit $rc"; }
expect_contains second.err "study 'held' is in use by another sweep (pid $first, lock out/held/lock)"
kill -9 "$first"
wait "$first" 2>/dev/null || true
"$TUNER" sweep space.yaml --study held >/dev/null 2>third.err || { cat third.err; fail "resume after a crash"; }

# --new never takes a name another sweep is making.
"$TUNER" sweep space.yaml --study n1 --new >/dev/null 2>n1.err &
p1=$!
"$TUNER" sweep space.yaml --study n1 --new >/dev/null 2>n2.err &
p2=$!
wait $p1 || { cat n1.err; fail "first --new sweep"; }
wait $p2 || { cat n2.err; fail "second --new sweep"; }
[ -f out/n1/manifest.json ] && [ -f out/n1-2/manifest.json ] || fail "--new: want studies n1 and n1-2"

# A trial id twice in the journal is reported on resume.
tr=out/t1/trials.jsonl
sed -n 2p $tr >>$tr
rm out/t1/manifest.json
rc=0
"$TUNER" sweep space.yaml --study t1 >/dev/null 2>dup.err || rc=$?
[ "$rc" -eq 1 ] || { cat dup.err; fail "a duplicated trial line was accepted (exit $rc)"; }
id=$(sed -n 2p $tr | json_field id)
expect_contains dup.err "$tr:4: trial id $id appears again (first at line 2)"
echo "ok"
