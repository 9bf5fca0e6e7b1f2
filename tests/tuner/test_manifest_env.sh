# The manifest round-trips through `tuner env`: eval'ing its output reproduces every value
# of the manifest's env exactly, quotes, dollars, backslashes and spaces included. Bad
# manifests are refused with a message naming the file (and the key).
source "$TESTS_DIR/sweep_lib.sh"

write_space space.yaml <<'YAML'
study: env
engine:
  command: [@ENGINE@]
  env:
    PLAIN: "512"
    QUOTE: "it's a 'quoted' value"
    DOUBLE: 'say "hi" $HOME `ls` \n \ back'
    EMPTY: ""
    SPACES: "  lead and trail  "
  timeout: 10
objective: {metric: tps, direction: maximize}
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: 256, step: 128}
  LM_HEAD_KEEPSET: {type: categorical, values: [0, 8192]}
strategy: grid
YAML
"$TUNER" sweep space.yaml >/dev/null 2>sweep.err || { cat sweep.err; fail "sweep failed"; }
m=out/env/manifest.json
"$TUNER" env $m >env.sh
cat env.sh
grep -q "^export QUOTE='it'\\\\''s a '\\\\''quoted'\\\\'' value'$" env.sh || fail "single quotes not escaped"
(
    set +u
    unset PLAIN QUOTE DOUBLE EMPTY SPACES SLIDING_WINDOW LM_HEAD_KEEPSET
    eval "$(cat env.sh)"
    [ "$PLAIN" = 512 ] || fail "PLAIN=$PLAIN"
    [ "$QUOTE" = "it's a 'quoted' value" ] || fail "QUOTE=$QUOTE"
    [ "$DOUBLE" = 'say "hi" $HOME `ls` \n \ back' ] || fail "DOUBLE=$DOUBLE"
    [ "${EMPTY-unset}" = "" ] || fail "EMPTY not set to empty"
    [ "$SPACES" = "  lead and trail  " ] || fail "SPACES=[$SPACES]"
    [ "$SLIDING_WINDOW" = 128 ] || fail "SLIDING_WINDOW=$SLIDING_WINDOW"
    [ "$LM_HEAD_KEEPSET" = 8192 ] || fail "LM_HEAD_KEEPSET=$LM_HEAD_KEEPSET"
    # exported: a child process sees them
    [ "$(bash -c 'printf %s "$QUOTE"')" = "it's a 'quoted' value" ] || fail "not exported"
)
# Every env key of the manifest is exported, and nothing else.
[ "$(grep -c '^export ' env.sh)" -eq 7 ] || fail "want 7 exports"

# The manifest's "reproduce" line, run by a shell, reruns the winner: same figures.
line=$(tr -d '\n' <$m | grep -o '"reproduce":[^}]*' | sed 's/^"reproduce":\s*"//; s/"\s*$//; s/\\"/"/g')
echo "reproduce: $line"
PATH="$(dirname "$TUNER"):$PATH" bash -c "$line" >again.out 2>/dev/null || fail "reproduce line failed"
want=$(tr -d '\n\t ' <$m | grep -o '"objective":{[^}]*}' | json_field median)
got=$(json_field tps <again.out)
[ "$got" = "$want" ] || fail "reproduced tps $got, manifest $want"

bad() { # $1 = file content, $2 = expected message part
    printf '%s' "$1" >bad.json
    local rc=0
    "$TUNER" env bad.json >/dev/null 2>bad.err || rc=$?
    [ "$rc" -eq 1 ] || fail "bad manifest '$1': exit $rc"
    expect_contains bad.err "bad.json"
    expect_contains bad.err "$2"
}
bad 'not json' "not a JSON object"
bad '{"point": {}}' 'no "env" object'
bad '{"env": {"A": 1}}' "env key 'A': value must be a string"
bad '{"env": {"A B": "x"}}' "env key 'A B' is not a valid shell variable name"
bad '{"env": {"1A": "x"}}' "env key '1A' is not a valid shell variable name"
rc=0
"$TUNER" env missing.json 2>missing.err || rc=$?
[ "$rc" -eq 1 ] || fail "missing manifest: exit $rc"
expect_contains missing.err "missing.json: cannot open"
echo "ok"
