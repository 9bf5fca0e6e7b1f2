# No process of a trial outlives it. An engine that daemonizes a sleeper (setsid, then a
# fork whose parent exits) loses it when its trial ends: with TUNER_TRIAL in the sleeper's
# environment or without (then with one worker), and with two workers, where the other
# run's exit status is still its own. A tuner killed with -9 takes its engines with it
# (PR_SET_PDEATHSIG); what they left running, in their group or outside it, is stopped by
# the next sweep of the study before it runs anything, and said so on stderr.
source "$TESTS_DIR/sweep_lib.sh"

# alive PID: the process exists and is no zombie.
alive() { [ -r "/proc/$1/stat" ] && ! sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | qgrep '^[ZX]'; }
# all_gone FILE SECONDS: wait until no pid of FILE is alive.
all_gone() {
    local p i
    for ((i = 0; i < $2 * 20; i++)); do
        local any=0
        for p in $(cat "$1"); do alive "$p" && any=1; done
        [ $any -eq 0 ] && return 0
        sleep 0.05
    done
    return 1
}

space() { # $1 = file, $2 = extra env entries
    write_space "$1" <<YAML
engine:
  command: [@ENGINE@]
  env: {SYNTH_DAEMON_PIDFILE: $T/$1.pids, SYNTH_CHECK_PIDS: $T/$1.pids, SYNTH_CHECK_LOG: $T/$1.check$2}
  timeout: 30
objective: {metric: tps, direction: maximize}
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: 384, step: 128}
strategy: grid
verify: {top: 1, repeats: 1}
YAML
}

# One worker: the daemon of trial 1 is gone when trial 2 starts, with or without its env.
for clear in 0 1; do
    f=one$clear.yaml
    space $f ", SYNTH_DAEMON_WHEN: SLIDING_WINDOW=128$([ $clear = 1 ] && echo ", SYNTH_DAEMON_CLEARENV: '1'")"
    "$TUNER" sweep $f >/dev/null 2>$f.err || { cat $f.err; fail "$f: sweep failed"; }
    [ -s $f.pids ] || fail "$f: the engine did not daemonize"
    d=$(head -1 $f.pids)
    qgrep "^2 $d gone$" $f.check || { cat $f.check; fail "$f: the daemon of trial 1 outlived its trial"; }
    all_gone $f.pids 2 || fail "$f: a daemon outlived the sweep"
    [ "$(search_lines out/${f%.yaml}/trials.jsonl | grep -c '"status":"ok"')" -eq 3 ] || fail "$f: want 3 ok trials"
done

# Two workers: trial 1 daemonizes and ends at once, trial 2 runs on (slow); trial 3 starts
# when trial 1 ends and must find its daemon gone; trial 2 keeps its own exit status.
space two.yaml ", SYNTH_DAEMON_WHEN: SLIDING_WINDOW=128, SYNTH_SLOW_WHEN: SLIDING_WINDOW=256, SYNTH_SLOW_S: '1.5', SYNTH_EXIT_WHEN: SLIDING_WINDOW=256"
"$TUNER" sweep two.yaml --workers 2 >/dev/null 2>two.err || { cat two.err; fail "two workers"; }
d=$(head -1 two.yaml.pids)
qgrep "^3 $d gone$" two.yaml.check || { cat two.yaml.check; fail "two workers: the daemon of trial 1 outlived it"; }
search_lines out/two/trials.jsonl | grep '"SLIDING_WINDOW":"256"' | json_field reason | qgrep "^exit status 3" ||
    fail "two workers: trial 2 lost its exit status"
all_gone two.yaml.pids 2 || fail "two workers: a daemon outlived the sweep"
# Without TUNER_TRIAL and with two runs in flight, the daemon is stopped by the sweep's end.
space two_clear.yaml ", SYNTH_DAEMON_WHEN: SLIDING_WINDOW=128, SYNTH_DAEMON_CLEARENV: '1'"
"$TUNER" sweep two_clear.yaml --workers 2 >/dev/null 2>two_clear.err || { cat two_clear.err; fail "two workers, no env"; }
all_gone two_clear.yaml.pids 2 || fail "two workers, no env: a daemon outlived the sweep"

# kill -9 of the tuner: the engine dies with it; its grandchild (same group) and its
# daemon (outside the group, recorded when it was found) are stopped by the next sweep.
space k.yaml ""
SYNTH_HANG_WHEN=always SYNTH_PIDFILE=$T/hang.pids SYNTH_DAEMON_WHEN=always sweep_bg k.err k.yaml
for ((i = 0; i < 200; i++)); do
    [ -s hang.pids ] && [ -s k.yaml.pids ] && break
    sleep 0.05
done
[ -s hang.pids ] || fail "kill -9: the engine did not start hanging"
read -r engine grandchild <hang.pids
daemon=$(head -1 k.yaml.pids)
for ((i = 0; i < 200; i++)); do
    qgrep "^proc $daemon " out/k/running/1 2>/dev/null && break
    sleep 0.05
done
qgrep '^group ' out/k/running/1 || fail "kill -9: the running trial is not recorded"
qgrep "^proc $daemon " out/k/running/1 || { cat out/k/running/1; fail "kill -9: the daemon is not recorded"; }
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
echo "$engine" >engine.pid
all_gone engine.pid 2 || fail "kill -9: the engine outlived the tuner"
alive "$grandchild" || fail "kill -9: the grandchild died too early (nothing left to test)"
alive "$daemon" || fail "kill -9: the daemon died too early (nothing left to test)"
"$TUNER" sweep k.yaml >/dev/null 2>k2.err || { cat k2.err; fail "kill -9: resume failed"; }
expect_contains k2.err "trial 1 of an earlier sweep (process group $engine) still has 2 processes running: stopping them"
echo "$grandchild $daemon" >left.pids
all_gone left.pids 2 || fail "kill -9: the resume left the earlier processes running"
[ ! -e out/k/running/1 ] || fail "kill -9: the record of trial 1 was not removed"
[ -z "$(ls out/k/running)" ] || fail "records of finished trials remain: $(ls out/k/running)"
echo "ok"
