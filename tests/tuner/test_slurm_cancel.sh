# Cancelling Slurm jobs, against a real Slurm cluster (slurm_lib.sh): a trial that times out
# gets its job cancelled, running or still queued; Ctrl-C cancels every job of the sweep;
# after kill -9 the jobs of the study stay in the queue, and the sweep that resumes the study
# cancels them by name before it runs anything. A job "blocker" that holds the generic
# resources keeps the trials' jobs queued where a test needs them queued.
source "$TESTS_DIR/sweep_lib.sh"
source "$TESTS_DIR/slurm_lib.sh"
slurm_start

space() { # space FILE STUDY TIMEOUT POINTS: a grid of POINTS windows under the slurm launcher
    write_space "$1" <<YAML
study: $2
engine:
  command: [@ENGINE@]
  timeout: $3
  launcher: {slurm: {partition: gpu, gres: "gpu:1"}}
objective: {metric: tps, direction: maximize}
constraints: [ppl <= 2.5]
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: $((128 * $4)), step: 128}
strategy: grid
verify: {top: 1, repeats: 2}
YAML
}

# block N: a job that holds N of the 2 generic resources until cancelled; its id in $blocker.
block() {
    blocker=$(sbatch --parsable --gres=gpu:"$1" --output=/dev/null --job-name=blocker --wrap 'sleep 600')
    local i
    for ((i = 0; i < 100; i++)); do
        [ "$(squeue -h -j "$blocker" -o %T)" = RUNNING ] && return 0
        sleep 0.1
    done
    slurm_fail "the blocker job did not start"
}

# study_jobs STUDY: "id name state" of the study's jobs in the queue.
study_jobs() { squeue -h -o '%i %j %T' | grep " tuner\.$1\.[0-9]* " || true; }

# wait_study_jobs STUDY N SECONDS: until the queue holds N jobs of the study.
wait_study_jobs() {
    local i
    for ((i = 0; i < $3 * 5; i++)); do
        [ "$(study_jobs "$1" | grep -c .)" -ge "$2" ] && return 0
        sleep 0.2
    done
    squeue >&2
    fail "the queue never held $2 jobs of study $1"
}

# killed_in_log ID: the controller's log shows a cancel request (scancel) for job ID.
killed_in_log() { slurm_ctld_log | qgrep -E "REQUEST_KILL_JOB JobId=$1 "; }

# 1. A running trial times out: its job is cancelled, and the engine on the node goes.
space hang.yaml hang 3 1
SYNTH_HANG_WHEN=always SYNTH_PIDFILE=$T/hang.pids "$TUNER" sweep hang.yaml >hang.out 2>hang.err &&
    fail "a sweep whose every trial hangs succeeded"
tr=out/hang/trials.jsonl
job=$(head -1 $tr | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["slurm"]["job"])')
expect_contains hang.err "trial 1 timed out: cancelling Slurm job $job (tuner.hang.1, RUNNING)"
head -1 $tr | qgrep "timed out after 3 s (Slurm job $job cancelled, process group stopped with SIG"
killed_in_log "$job" || slurm_fail "no cancel request for job $job in the controller's log"
for ((i = 0; i < 50; i++)); do
    alive=0
    for p in $(cat hang.pids); do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive -eq 0 ] && break
    sleep 0.2
done
[ $alive -eq 0 ] || fail "the hanging engine survived the cancelled job: $(cat hang.pids)"
slurm_wait_empty 15

# 2. A queued trial times out: its job is cancelled before it ever ran.
block 2
space queued.yaml queued 3 1
"$TUNER" sweep queued.yaml >queued.out 2>queued.err && fail "a sweep whose trials never ran succeeded"
line=$(head -1 out/queued/trials.jsonl)
job=$(echo "$line" | python3 -c 'import json,sys; r = json.loads(sys.stdin.readline()); assert "node" not in r, r; print(r["slurm"]["job"])')
expect_contains queued.err "trial 1 timed out: cancelling Slurm job $job (tuner.queued.1, PENDING)"
killed_in_log "$job" || slurm_fail "no cancel request for the queued job $job"
[ -z "$(study_jobs queued)" ] || fail "queued jobs left: $(study_jobs queued)"
scancel "$blocker"
slurm_wait_empty 15

# 3. Ctrl-C with one trial running and one queued: both jobs are cancelled.
block 1
space ctrlc.yaml ctrlc 120 4
SYNTH_HANG_WHEN=always sweep_bg ctrlc.err ctrlc.yaml --workers 2
wait_study_jobs ctrlc 2 20
study_jobs ctrlc >ctrlc.jobs
qgrep RUNNING ctrlc.jobs && qgrep PENDING ctrlc.jobs || fail "want one trial running and one queued: $(cat ctrlc.jobs)"
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
[ $rc -eq 130 ] || { cat ctrlc.err; fail "Ctrl-C: exit status $rc, want 130"; }
while read -r id name state; do
    expect_contains ctrlc.err "cancelling Slurm job $id ($name, $state)"
    killed_in_log "$id" || slurm_fail "no cancel request for job $id after Ctrl-C"
done <ctrlc.jobs
for ((i = 0; i < 50; i++)); do
    [ -z "$(study_jobs ctrlc)" ] && break
    sleep 0.2
done
[ -z "$(study_jobs ctrlc)" ] || fail "jobs of the interrupted sweep left: $(study_jobs ctrlc)"
[ "$(squeue -h -j "$blocker" -o %T)" = RUNNING ] || fail "Ctrl-C cancelled a job that is not the sweep's"

# 4. kill -9 with two trials queued: their jobs stay in the queue (srun died with the tuner),
# and the resumed sweep cancels them before it runs anything.
scancel "$blocker"
block 2
space resume.yaml resume 120 2
sweep_bg kill.err resume.yaml --workers 2
wait_study_jobs resume 2 20
study_jobs resume >old.jobs
kill -KILL "$pid"
wait "$pid" 2>/dev/null || true
sleep 1
[ "$(study_jobs resume | grep -c .)" -eq 2 ] || fail "after kill -9 the queue lost the study's jobs: $(study_jobs resume)"
sweep_bg resume.err resume.yaml --workers 2
for ((i = 0; i < 100; i++)); do
    [ "$(grep -c 'left by an earlier sweep: cancelling' resume.err)" -ge 2 ] && break
    sleep 0.2
done
scancel "$blocker" # now the resumed sweep's own jobs can run
rc=0
wait "$pid" || rc=$?
[ $rc -eq 0 ] || { cat resume.err; fail "the resumed sweep failed with status $rc"; }
max_old=0
while read -r id name state; do
    expect_contains resume.err "left by an earlier sweep: cancelling Slurm job $id ($name, $state)"
    [ "$id" -gt "$max_old" ] && max_old=$id
done <old.jobs
# Before anything ran: the first job the resumed sweep started came after the cancel requests.
python3 - "$SLURM_DIR/slurmctld.log" "$max_old" old.jobs <<'PY' || slurm_fail "the resumed sweep ran a trial before it cancelled the old jobs"
import re, sys
log, max_old = open(sys.argv[1]).read().splitlines(), int(sys.argv[2])
old = {l.split()[0] for l in open(sys.argv[3])}
kills = [i for i, l in enumerate(log) for j in old if f"REQUEST_KILL_JOB JobId={j} " in l]
starts = [i for i, l in enumerate(log)
          if (m := re.search(r"_slurm_rpc_allocate_resources JobId=(\d+) ", l)) and int(m.group(1)) > max_old]
assert len({j for j in old for l in log if f"REQUEST_KILL_JOB JobId={j} " in l}) == len(old), "an old job was not cancelled"
assert starts and max(kills) < min(starts), (kills, starts)
PY
python3 - out/resume/trials.jsonl <<'PY' || fail "the resumed study is not complete"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert {r["point"]["SLIDING_WINDOW"] for r in recs if r["phase"] == "search"} == {"128", "256"}, recs
assert all(r["status"] == "ok" and r["slurm"]["job"] for r in recs), recs
PY
slurm_wait_empty 15
echo "PASS"
