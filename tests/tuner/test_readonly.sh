# A study folder that cannot be written can still be read: `tuner show`, `tuner report
# --stdout`, and resuming a study that is finished (nothing is written then: the manifest
# stands as it is). Resuming one that is not finished says why it cannot go on.
# As root, the commands run as nobody (setpriv), for whom the folder is read-only; where that
# is not possible, they run as root and the test checks that nothing was written.
source "$TESTS_DIR/sweep_lib.sh"

write_space space.yaml <<'YAML'
engine: {command: [@ENGINE@], timeout: 10}
objective: {metric: tps, direction: maximize}
constraints: [ppl <= 2.5]
parameters:
  SLIDING_WINDOW: {type: int, min: 256, max: 512, step: 256}
strategy: grid
verify: {top: 1, repeats: 1}
YAML
"$TUNER" sweep space.yaml --study ro >first.out 2>first.err || { cat first.err; fail "first sweep"; }
cp -a out/ro out/unfinished
sed -i '$d' out/unfinished/trials.jsonl
rm out/unfinished/manifest.json
chmod -R a-w out
chmod 755 "$T"
as_reader() { "$@"; }
read_only=1
if [ "$(id -u)" -eq 0 ]; then
    as_reader() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
    if ! as_reader true 2>/dev/null; then
        echo "note: cannot run as nobody here; running as root" >&2
        as_reader() { "$@"; }
        read_only=0
    elif as_reader touch out/ro/probe 2>/dev/null; then
        fail "the folder is writable as nobody"
    fi
fi
snapshot() { find out -printf '%p %s %T@ %m\n' | sort; }
snapshot >before.txt

as_reader "$TUNER" show ro >show.out 2>show.err || { cat show.err; fail "show of a read-only study"; }
expect_contains show.out "SLIDING_WINDOW="
as_reader "$TUNER" report ro --stdout >report.md 2>report.err || { cat report.err; fail "report --stdout of a read-only study"; }
qgrep "^## Every point" report.md || fail "report --stdout printed no report"
as_reader "$TUNER" sweep space.yaml --study ro >again.out 2>again.err || { cat again.err; fail "resume of a finished read-only study"; }
cmp -s again.out out/ro/manifest.json || fail "the resume did not print the manifest as written"
snapshot >after.txt
cmp -s before.txt after.txt || { diff before.txt after.txt >&2; fail "a read-only command wrote to the study folder"; }
if [ $read_only = 1 ]; then
    rc=0
    as_reader "$TUNER" sweep space.yaml --study unfinished >/dev/null 2>unf.err || rc=$?
    [ "$rc" -eq 1 ] || { cat unf.err; fail "resume of an unfinished read-only study: exit $rc"; }
    expect_contains unf.err "study 'unfinished' is not finished, and its folder"
    expect_contains unf.err "cannot be written: no trial can be run"
fi
snapshot >after.txt
cmp -s before.txt after.txt || { diff before.txt after.txt >&2; fail "a read-only command wrote to the study folder"; }
chmod -R u+w out
echo "ok"
