# The command line: help for every command, usage errors (exit 2), bad space files and
# unusable out folders (exit 1, the file named), --dry-run writing nothing, show errors.
source "$TESTS_DIR/sweep_lib.sh"

"$TUNER" --help >help.out
expect_contains help.out "usage: tuner COMMAND"
for c in sweep show env; do
    "$TUNER" $c --help >h.out || fail "$c --help"
    expect_contains h.out "usage: tuner $c"
done
usage() { # expected message, then the arguments
    local want=$1 rc=0
    shift
    "$TUNER" "$@" >/dev/null 2>u.err || rc=$?
    [ "$rc" -eq 2 ] || fail "tuner $*: exit $rc, want 2"
    expect_contains u.err "$want"
    expect_contains u.err "usage:"
}
usage "usage: tuner COMMAND"
usage "unknown command 'frobnicate'" frobnicate
usage "unknown option --bogus" sweep x.yaml --bogus
usage "no space file given" sweep
usage "--study needs a value" sweep x.yaml --study
usage "--study 'a/b': a study name is made of letters, digits, '.', '_' and '-'" sweep x.yaml --study a/b
usage "--study '-x': a study name may not start with '-' or '.'" sweep x.yaml --study -x
usage "--study '..': a study name may not start with '-' or '.'" sweep x.yaml --study ..
usage "--study '': a study name may not be empty" sweep x.yaml --study ''
usage "a study name has at most 100 characters" sweep x.yaml --study "$(printf 'a%.0s' $(seq 101))"
usage "--log-limit 'lots': a size of at least 1K" sweep x.yaml --log-limit lots
usage "--log-limit '10': a size of at least 1K" sweep x.yaml --log-limit 10
usage "more than one space file" sweep a.yaml b.yaml
usage "not a number of seconds" sweep x.yaml --grace soon
usage "no study given" show
usage "no manifest given" env

# Bad space files: the loader's message (file, line, key) and exit 1.
printf 'engine: {command: [x]}\nobjective: {metric: tps, direction: upward}\nparameters: {A: {type: int, min: 1, max: 2}}\n' >bad.yaml
rc=0
"$TUNER" sweep bad.yaml 2>bad.err || rc=$?
[ "$rc" -eq 1 ] || fail "bad space: exit $rc"
expect_contains bad.err "bad.yaml:2"
rc=0
"$TUNER" sweep nowhere.yaml 2>none.err || rc=$?
[ "$rc" -eq 1 ] || fail "missing space: exit $rc"
expect_contains none.err "nowhere.yaml"
[ ! -e out/bad ] && [ ! -e out/nowhere ] || fail "a bad space created a study folder"

write_space ok.yaml <<'YAML'
engine: {command: [@ENGINE@], timeout: 10}
objective: {metric: tps, direction: maximize}
parameters: {SLIDING_WINDOW: {type: int, min: 128, max: 512, step: 128}}
strategy: grid
YAML
# Relative paths: the command resolves against the space file's folder, and so does the
# working directory; the engine runs there.
mkdir -p rel/spaces rel/bin rel/work
ln -s "$SYNTH_ENGINE" rel/bin/synth
cat >rel/spaces/rel.yaml <<'YAML'
engine: {command: [../bin/synth], workdir: ../work, env: {SYNTH_OUTPUT: file}, timeout: 10}
objective: {metric: tps, direction: maximize}
parameters: {SLIDING_WINDOW: {type: int, min: 256, max: 512, step: 256}}
strategy: grid
YAML
"$TUNER" sweep rel/spaces/rel.yaml --out rel/out >/dev/null 2>rel.err || { cat rel.err; fail "relative paths"; }
[ "$(search_lines rel/out/rel/trials.jsonl | grep -c '"status":"ok"')" -eq 2 ] || fail "relative command did not run"
expect_contains rel/out/rel/manifest.json "\"workdir\":	\"$(cd rel/work && pwd -P)\""

"$TUNER" sweep ok.yaml --dry-run >dry.out 2>dry.err || { cat dry.err; fail "dry run"; }
expect_contains dry.out "4 points; strategy grid"
expect_contains dry.out "1. SLIDING_WINDOW=128"
expect_contains dry.out "4. SLIDING_WINDOW=512"
[ ! -e out ] || fail "--dry-run wrote $(ls -R out)"

# Out folders the tuner cannot use: the folder is named, exit 1, nothing half-made.
echo "a file" >notadir
rc=0
"$TUNER" sweep ok.yaml --out notadir/studies 2>nd.err || rc=$?
[ "$rc" -eq 1 ] || fail "out under a file: exit $rc"
expect_contains nd.err "cannot create folder notadir: a file of that name is in the way"
if [ "$(id -u)" -ne 0 ]; then # root ignores permissions
    mkdir ro && chmod 555 ro
    rc=0
    "$TUNER" sweep ok.yaml --out ro 2>ro.err || rc=$?
    [ "$rc" -eq 1 ] || fail "read-only out: exit $rc"
    expect_contains ro.err "cannot create folder ro/ok: Permission denied"
fi
# Damaged study folders: a journal that is a folder, an empty hash file.
"$TUNER" sweep ok.yaml --study broken >/dev/null 2>&1 || fail "sweep --study broken"
rm out/broken/trials.jsonl && mkdir out/broken/trials.jsonl
rc=0
"$TUNER" sweep ok.yaml --study broken 2>br.err || rc=$?
[ "$rc" -eq 1 ] || fail "broken study: exit $rc"
expect_contains br.err "cannot open out/broken/trials.jsonl for appending: Is a directory"
: >out/broken/space.hash
rc=0
"$TUNER" sweep ok.yaml --study broken 2>br2.err || rc=$?
[ "$rc" -eq 1 ] || fail "empty hash: exit $rc"
expect_contains br2.err "out/broken/space.hash: not a space hash (16 hex digits): the study folder is damaged"

# show: unknown study, damaged journal (a bad line before the last one).
rc=0
"$TUNER" show nosuch 2>ns.err || rc=$?
[ "$rc" -eq 1 ] || fail "show of a missing study: exit $rc"
expect_contains ns.err "no study folder out/nosuch"
"$TUNER" sweep ok.yaml >/dev/null 2>&1 || fail "sweep ok.yaml"
sed -i '2s/.*/garbage/' out/ok/trials.jsonl
rc=0
"$TUNER" show ok 2>dmg.err || rc=$?
[ "$rc" -eq 1 ] || fail "show of a damaged journal: exit $rc"
expect_contains dmg.err "out/ok/trials.jsonl:2: not a JSON object: the journal is damaged"
rc=0
"$TUNER" sweep ok.yaml 2>dmg2.err || rc=$?
[ "$rc" -eq 1 ] || fail "sweep on a damaged journal: exit $rc"
expect_contains dmg2.err "trials.jsonl:2: not a JSON object"
echo "ok"
