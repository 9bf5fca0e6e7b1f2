# Names the tuner sets (TUNER_*) are refused as knobs and engine.env entries; names the
# dynamic loader or shells act on need allow_env in the space, which the manifest carries
# and `tuner env` obeys: it refuses to export such a name that allow_env does not list.
source "$TESTS_DIR/sweep_lib.sh"

refused() { # file, expected message
    local rc=0
    "$TUNER" sweep "$1" >/dev/null 2>r.err || rc=$?
    [ "$rc" -eq 1 ] || { cat r.err; fail "$1: exit $rc, want 1"; }
    expect_contains r.err "$2"
}
base='objective: {metric: tps, direction: maximize}
strategy: grid
verify: {top: 1, repeats: 1}'
printf 'engine: {command: [%s]}\n%s\nparameters: {TUNER_TRIAL: {type: int, min: 1, max: 2}}\n' "$SYNTH_ENGINE" "$base" >r1.yaml
refused r1.yaml "r1.yaml:5: key 'parameters.TUNER_TRIAL': TUNER_TRIAL is set by the tuner"
printf 'engine: {command: [%s], env: {TUNER_RESULT: x}}\n%s\nparameters: {A: {type: int, min: 1, max: 2}}\n' "$SYNTH_ENGINE" "$base" >r2.yaml
refused r2.yaml "r2.yaml:1: key 'engine.env.TUNER_RESULT': TUNER_RESULT is set by the tuner"
printf 'engine: {command: [%s]}\n%s\nparameters: {LD_BIND_NOW: {type: int, min: 1, max: 2}}\n' "$SYNTH_ENGINE" "$base" >r3.yaml
refused r3.yaml "key 'parameters.LD_BIND_NOW': LD_BIND_NOW is acted on by the dynamic loader or shells; list it in allow_env"
printf 'engine: {command: [%s], env: {BASH_ENV: /x}}\n%s\nparameters: {A: {type: int, min: 1, max: 2}}\n' "$SYNTH_ENGINE" "$base" >r4.yaml
refused r4.yaml "key 'engine.env.BASH_ENV': BASH_ENV is acted on"

# Allowed: the sweep runs, the manifest lists the names, `tuner env` exports them.
printf 'engine: {command: [%s], env: {LD_BIND_NOW: "1"}}\n%s\nallow_env: [LD_BIND_NOW]\nparameters: {A: {type: int, min: 1, max: 2}}\n' "$SYNTH_ENGINE" "$base" >ok.yaml
"$TUNER" sweep ok.yaml >/dev/null 2>ok.err || { cat ok.err; fail "allow_env sweep"; }
qgrep '"allow_env"' out/ok/manifest.json || fail "the manifest lacks allow_env"
"$TUNER" env out/ok/manifest.json >env.sh || fail "tuner env of an allowed name"
expect_contains env.sh "export LD_BIND_NOW='1'"

# A manifest whose env has such a name without allow_env is refused by `tuner env`.
bad() { # manifest text, expected message
    printf '%s' "$1" >m.json
    local rc=0
    "$TUNER" env m.json >/dev/null 2>m.err || rc=$?
    [ "$rc" -eq 1 ] || fail "tuner env '$1': exit $rc"
    expect_contains m.err "m.json: $2"
}
bad '{"env": {"PATH": "/tmp/evil"}}' "env key 'PATH' is acted on by the dynamic loader or shells and the manifest's allow_env does not list it"
bad '{"env": {"LD_PRELOAD": "/tmp/x.so"}, "allow_env": ["PATH"]}' "env key 'LD_PRELOAD' is acted on"
bad '{"env": {"TUNER_RESULT": "x"}, "allow_env": ["TUNER_RESULT"]}' "env key 'TUNER_RESULT' is set by the tuner"
printf '{"env": {"PATH": "/bin", "A": "1"}, "allow_env": ["PATH"]}' >m.json
"$TUNER" env m.json >m.sh || fail "an allowed PATH is refused"
expect_contains m.sh "export PATH='/bin'"
echo "ok"
