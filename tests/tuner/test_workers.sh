# --workers N: N trials at once, never the same point twice (grid, sobol and bayes, whose
# proposals account for the points still running), each run pinned to its worker's GPU
# with --gpus, the launcher wrapping each run; kill -9 with several runs in flight and a
# resume that repeats nothing finished and loses nothing; Ctrl-C stops every engine.
source "$TESTS_DIR/sweep_lib.sh"

# no_duplicates FILE: every search point measured exactly once.
no_duplicates() {
    local n u
    n=$(n_search "$1")
    u=$(search_lines "$1" | grep -o '"point":{[^}]*}' | sort -u | wc -l)
    [ "$n" -eq "$u" ] || fail "$1: $n search trials but only $u distinct points"
}

write_space grid.yaml <<'YAML'
study: grid
engine: {command: [@ENGINE@], env: {SYNTH_SLOW_START: "0.15"}, timeout: 20}
objective: {metric: tps, direction: maximize}
constraints: [ppl <= 2.4]
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: 512, step: 128}
  NUM_SPECULATIVE_TOKENS: {type: int, min: 0, max: 2}
strategy: grid
verify: {top: 2, repeats: 2}
YAML
# The serial reference, then 3 workers pinned to GPUs 0,1,2.
"$TUNER" sweep grid.yaml --out ref >ref.out 2>ref.err || { cat ref.err; fail "serial sweep"; }
mkdir live
SYNTH_LIVE_DIR=$T/live "$TUNER" sweep grid.yaml --out par --gpus 0,1,2 >par.out 2>par.err ||
    { cat par.err; fail "parallel sweep"; }
tr=par/grid/trials.jsonl
[ "$(n_search $tr)" -eq 12 ] || fail "want 12 search trials, got $(n_search $tr)"
[ "$(verify_lines $tr | wc -l)" -eq 4 ] || fail "want 2 candidates x 2 verification runs"
no_duplicates $tr
# Runs overlapped, and never more than 3 at once.
max=$(sort -n live.log | tail -1)
[ "$max" -ge 2 ] && [ "$max" -le 3 ] || fail "at most $max engines ran at once, want 2..3"
# Ids are allocated at start: 1..16, each once.
cmp -s <(json_field id <$tr | sort -n) <(seq 1 16) || fail "trial ids are not 1..16"
# Each run saw its worker's GPU, and the journal says which.
while read -r line; do
    g=$(echo "$line" | json_field gpu)
    c=$(echo "$line" | json_field cuda_visible_devices)
    case "$g" in 0 | 1 | 2) ;; *) fail "trial without a GPU of the list: $line" ;; esac
    [ "$g" = "$c" ] || fail "journal says GPU $g, the engine saw CUDA_VISIBLE_DEVICES=$c"
done <$tr
[ "$(json_field gpu <$tr | sort -u | wc -l)" -eq 3 ] || fail "not every GPU was used"
expect_contains par.err "on GPU 1"
# The same answer as the serial sweep.
cmp -s <(grep -o '"env":[^}]*}' par/grid/manifest.json) <(grep -o '"env":[^}]*}' ref/grid/manifest.json) ||
    fail "parallel sweep chose another point than the serial one"

# On a terminal the live line says how many runs are in flight.
command -v script >/dev/null || fail "script(1) (bsdutils) is needed for this test"
script -qefc "'$TUNER' sweep grid.yaml --study tty --workers 2 >/dev/null" /dev/null >tty.out </dev/null ||
    { cat tty.out; fail "parallel sweep on a terminal"; }
tr '\r' '\n' <tty.out | sed 's/\x1b\[K//g' >tty.lines
grep -q '^trial [0-9]* of 16 | running 2 of 2 | best ' tty.lines || { cat tty.lines; fail "no running count"; }

# Sobol and bayes with 4 workers: no point twice.
for strat in sobol bayes; do
    write_space $strat.yaml <<YAML
study: $strat
engine: {command: [@ENGINE@], env: {SYNTH_SLOW_START: "0.05", SYNTH_NOISE: "0.02"}, timeout: 20}
objective: {metric: tps, direction: maximize}
constraints: [ppl <= 2.45]
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: 512, step: 32}
  NUM_SPECULATIVE_TOKENS: {type: int, min: 0, max: 8}
  LM_HEAD_KEEPSET: {type: categorical, values: [0, 8192, 16384]}
strategy: {name: $strat, seed: 3}
budget: {evaluations: 24}
verify: {top: 2, repeats: 1}
YAML
    "$TUNER" sweep $strat.yaml --workers 4 >$strat.out 2>$strat.err || { cat $strat.err; fail "$strat with 4 workers"; }
    [ "$(n_search out/$strat/trials.jsonl)" -eq 24 ] || fail "$strat: want 24 search trials"
    no_duplicates out/$strat/trials.jsonl
done

# kill -9 of the tuner with 4 runs in flight, then a resume.
write_space kill.yaml <<'YAML'
study: kill
engine: {command: [@ENGINE@], env: {SYNTH_SLOW_START: "0.2"}, timeout: 20}
objective: {metric: tps, direction: maximize}
parameters:
  SLIDING_WINDOW: {type: int, min: 64, max: 512, step: 64}
  NUM_SPECULATIVE_TOKENS: {type: int, min: 0, max: 2}
strategy: {name: sobol, seed: 1}
budget: {evaluations: 16}
verify: {top: 1, repeats: 1}
YAML
export SYNTH_CALLS=$T/calls
sweep_bg kill1.err kill.yaml --workers 4
tr=out/kill/trials.jsonl
stop_at $tr 5 30 KILL
n_before=$(wc -l <$tr)
[ "$n_before" -lt 16 ] || fail "the sweep finished before it was killed"
cp $tr before.jsonl
sleep 0.5 # the orphaned engines of the killed tuner finish on their own
"$TUNER" sweep kill.yaml --workers 4 >/dev/null 2>kill2.err || { cat kill2.err; fail "resume after kill -9"; }
expect_contains kill2.err "resuming study 'kill': $n_before runs"
cmp -s before.jsonl <(head -n "$n_before" $tr) || fail "lines written before the kill changed"
[ "$(n_search $tr)" -eq 16 ] || fail "want 16 search trials after the resume, got $(n_search $tr)"
no_duplicates $tr
[ "$(json_field id <$tr | sort -n | uniq -d | wc -l)" -eq 0 ] || fail "a trial id was used twice"
unset SYNTH_CALLS

# Ctrl-C with 3 hung engines in flight: every engine is stopped, nothing is recorded.
write_space hang.yaml <<'YAML'
study: hang
engine: {command: [@ENGINE@], timeout: 60}
objective: {metric: tps, direction: maximize}
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: 512, step: 128}
strategy: grid
YAML
SYNTH_HANG_WHEN=always SYNTH_PIDFILE=$T/pids sweep_bg hang.err hang.yaml --workers 3
stop_at pids 3 20 INT
[ "$rc" -eq 130 ] || { cat hang.err; fail "exit status $rc after SIGINT, want 130"; }
expect_contains hang.err "the running trials were stopped and will be run again"
[ ! -s out/hang/trials.jsonl ] || fail "an interrupted trial was recorded"
for p in $(cat pids); do [ ! -e "/proc/$p" ] || fail "engine process $p survived Ctrl-C"; done

# Each run has its own timeout: a hung engine is stopped while the other worker goes on.
write_space tmo.yaml <<'YAML'
study: tmo
engine: {command: [@ENGINE@], env: {SYNTH_SLOW_START: "0.1"}, timeout: 1}
objective: {metric: tps, direction: maximize}
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: 512, step: 128}
strategy: grid
verify: {top: 1, repeats: 1}
YAML
SYNTH_HANG_WHEN=SLIDING_WINDOW=256 SYNTH_PIDFILE=$T/tmo.pids "$TUNER" sweep tmo.yaml --workers 2 \
    >/dev/null 2>tmo.err || { cat tmo.err; fail "sweep with a hung engine"; }
tr=out/tmo/trials.jsonl
search_lines $tr | grep '"SLIDING_WINDOW":"256"' | json_field reason | qgrep '^timed out after 1 s' ||
    fail "the hung run did not time out"
[ "$(search_lines $tr | grep -c '"status":"ok"')" -eq 3 ] || fail "the other runs are not ok"
# The other worker went on meanwhile: a run started while the hung one was in flight
# (trial ids are given at start) ended before it in the journal.
[ "$(search_lines $tr | json_field id | head -3 | tr '\n' ' ')" != "1 2 3 " ] ||
    fail "the journal is in start order: runs did not overlap the hung one"
for p in $(cat tmo.pids); do [ ! -e "/proc/$p" ] || fail "process $p of the hung run survived"; done
expect_contains out/tmo/logs/2.log "synth_engine: hanging"

# The launcher wraps each run (here a shell that sets a variable, as srun would set up the job).
write_space launch.yaml <<'YAML'
study: launch
engine: {command: [@ENGINE@], launcher: "LAUNCHED=yes exec {cmd}", timeout: 20}
objective: {metric: tps, direction: maximize}
parameters:
  SLIDING_WINDOW: {type: int, min: 256, max: 512, step: 256}
strategy: grid
verify: {top: 1, repeats: 1}
YAML
cat >launched.sh <<SH
#!/bin/sh
[ "\$LAUNCHED" = yes ] || { echo "not launched" >&2; exit 9; }
exec "$SYNTH_ENGINE"
SH
chmod +x launched.sh
sed -i "s#command: \[[^]]*\]#command: [$T/launched.sh]#" launch.yaml
"$TUNER" sweep launch.yaml --workers 2 >/dev/null 2>launch.err || { cat launch.err; fail "launcher sweep"; }
[ "$(grep -c '"status":"ok"' out/launch/trials.jsonl)" -eq 3 ] || fail "launched runs not ok"

# Bad command lines.
for args in "--workers 0" "--workers x" "--workers" "--gpus 0,,1" "--gpus ,0" "--gpus 0;1" "--gpus 0,1 --workers 3"; do
    rc=0
    # shellcheck disable=SC2086
    "$TUNER" sweep grid.yaml $args >/dev/null 2>bad.err || rc=$?
    [ "$rc" -eq 2 ] || fail "'$args': exit $rc, want 2"
done
expect_contains bad.err "--workers is larger than the 2 GPUs of --gpus"
echo "ok"
