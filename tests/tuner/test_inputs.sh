# Input files that are not what they should be fail fast with a message naming them: a
# space that is a device, a pipe or a folder, or too large; a study name from a space file
# name that is not one; a space.hash with a NUL byte. And the verification's repeat labels
# stay distinct when a study resumes a verification that a killed sweep left half done.
source "$TESTS_DIR/sweep_lib.sh"

refused() { # expected message, then the arguments of tuner sweep
    local want=$1 rc=0 t0=$SECONDS
    shift
    timeout -k 1 10 "$TUNER" sweep "$@" >/dev/null 2>r.err || rc=$?
    [ "$rc" -eq 1 ] || { cat r.err; fail "sweep $*: exit $rc, want 1"; }
    [ $((SECONDS - t0)) -lt 5 ] || fail "sweep $*: took $((SECONDS - t0)) s"
    expect_contains r.err "$want"
}
refused "/dev/zero: not a regular file (a device)" /dev/zero
mkfifo fifo.yaml
refused "fifo.yaml: not a regular file (a pipe)" fifo.yaml
mkdir dir.yaml
refused "dir.yaml: not a regular file (a folder)" dir.yaml
{ echo "# padding"; head -c 2000000 /dev/zero | tr '\0' '#'; echo; } >big.yaml
refused "big.yaml: 2000011 bytes, larger than the 1048576 bytes such a file may have" big.yaml

write_space ok.yaml <<'YAML'
engine: {command: [@ENGINE@], timeout: 10}
objective: {metric: tps, direction: maximize}
parameters:
  SLIDING_WINDOW: {type: int, min: 256, max: 512, step: 256}
strategy: grid
verify: {top: 1, repeats: 3}
YAML
cp ok.yaml "bad name.yaml"
refused "the space file bad name.yaml gives the study the name 'bad name': a study name is made of letters, digits, '.', '_' and '-'; pass --study NAME" "bad name.yaml"
"$TUNER" sweep "bad name.yaml" --study fine >/dev/null 2>fine.err || { cat fine.err; fail "--study fixes a bad file name"; }

# space.hash: 16 hex digits, a newline, and nothing else.
"$TUNER" sweep ok.yaml >/dev/null 2>ok.err || { cat ok.err; fail "sweep ok.yaml"; }
cp out/ok/space.hash hash.good
{ cat hash.good; printf '\0'; } >out/ok/space.hash
refused "out/ok/space.hash: not a space hash (16 hex digits): the study folder is damaged" ok.yaml
{ tr -d '\n' <hash.good; printf '\0\n'; } >out/ok/space.hash
refused "out/ok/space.hash: not a space hash" ok.yaml
cp hash.good out/ok/space.hash
"$TUNER" sweep ok.yaml >/dev/null 2>ok2.err || { cat ok2.err; fail "the good hash is refused"; }

# A verification that a killed sweep left with repeats 1 and 2 done, 0 not: the run that
# completes it is repeat 0, not a second repeat 2.
tr=out/ok/trials.jsonl
[ "$(verify_lines $tr | wc -l)" -eq 3 ] || fail "want 3 verification runs"
line=$(verify_lines $tr | grep '"repeat":0') || fail "no repeat 0 in the verification"
grep -vF -- "$line" $tr >t.tmp && mv t.tmp $tr
rm out/ok/manifest.json
"$TUNER" sweep ok.yaml --workers 3 >/dev/null 2>resume.err || { cat resume.err; fail "resume of the verification"; }
[ "$(verify_lines $tr | json_field repeat | sort -n | tr '\n' ' ')" = "0 1 2 " ] ||
    fail "repeat labels after the resume: $(verify_lines $tr | json_field repeat | tr '\n' ' ')"
echo "ok"
