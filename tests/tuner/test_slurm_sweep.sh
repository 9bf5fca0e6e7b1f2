# Sweeps on a real Slurm cluster (slurm_lib.sh starts one on this machine): the synthetic
# engine swept through srun with --workers 2 by the slurm launcher, every trial a job of its
# own whose id the journal records and the controller knows by the trial's name; the same
# journal and manifest as the sweep run locally; nothing left in the queue. Then the batch
# pattern: examples/slurm/sweep.sbatch holding 2 generic resources, each trial a job step
# of that one allocation.
source "$TESTS_DIR/sweep_lib.sh"
source "$TESTS_DIR/slurm_lib.sh"
slurm_start

space() { # space FILE LAUNCHER: the study both sweeps run
    write_space "$1" <<YAML
study: syn
engine:
  command: [@ENGINE@]
  env: {SYNTH_SLOW_START: "0.3"}
  timeout: 60
$2
objective: {metric: tps, direction: maximize}
constraints: [ppl <= 1.04 * baseline]
baseline: {SLIDING_WINDOW: 512, NUM_SPECULATIVE_TOKENS: 0}
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: 512, step: 128, default: 512}
  NUM_SPECULATIVE_TOKENS: {type: int, min: 0, max: 4, step: 4, default: 0}
strategy: grid
verify: {top: 2, repeats: 2}
YAML
}
mkdir local cluster
space local/syn.yaml ""
space cluster/syn.yaml '  launcher: {slurm: {partition: gpu, gres: "gpu:1", time: 5m}}'

"$TUNER" sweep local/syn.yaml --out local/out --workers 2 >local.out 2>local.err ||
    { cat local.err; fail "local sweep"; }
mkdir live
SYNTH_LIVE_DIR=$T/live "$TUNER" sweep cluster/syn.yaml --out cluster/out --workers 2 \
    >cluster.out 2>cluster.err || { cat cluster.err; slurm_fail "sweep through Slurm"; }
tr=cluster/out/syn/trials.jsonl
n=$(wc -l <$tr)
[ "$n" -eq "$(wc -l <local/out/syn/trials.jsonl)" ] && [ "$(n_search $tr)" -ge 8 ] ||
    fail "want the runs of the local sweep (the 8 points and their verification), got $n runs"
# Two trials ran at once.
[ "$(sort -n live.log | tail -1)" -eq 2 ] || fail "the two workers never ran at once"

# Every trial ran as a Slurm job named after the study and the trial, whose id the journal
# records: the controller allocated it, and still lists it (completed) under that name.
squeue -h -t all -o '%i %j %T' >jobs.txt
slurm_ctld_log >ctld.log
python3 - "$tr" jobs.txt ctld.log <<'PY' || fail "trials and Slurm jobs disagree"
import json, re, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
jobs = {}
for line in open(sys.argv[2]):
    jid, name, state = line.split()
    jobs[jid] = (name, state)
log = open(sys.argv[3]).read()
seen = set()
for r in recs:
    s = r.get("slurm")
    assert s, f"trial {r['id']} has no slurm record: {r}"
    want = f"tuner.syn.{r['id']}"
    assert s["name"] == want, (s, want)
    jid = s["job"]
    assert jid and jid not in seen, f"trial {r['id']}: job id {jid} missing or used twice"
    seen.add(jid)
    assert s["step"] == "0", s
    assert jobs.get(jid, (None,))[0] == want, f"squeue lists job {jid} as {jobs.get(jid)}, want {want}"
    assert jobs[jid][1] == "COMPLETED", jobs[jid]
    assert re.search(rf"_slurm_rpc_allocate_resources JobId={jid} NodeList=", log), f"job {jid} not in the controller's log"
    assert r["metrics"]["cuda_visible_devices"] in ("0", "1"), r["metrics"]
    assert r["node"]["host"] and r["node"]["model"], r
PY
python3 - cluster/out/syn/manifest.json <<'PY' || fail "the manifest lacks the srun line"
import json, sys
l = json.load(open(sys.argv[1]))["engine"]["launcher"]
assert l == "srun --job-name=tuner.STUDY.TRIAL --nodes=1 --ntasks=1 --partition=gpu --gres=gpu:1 --time=0-00:05:00 {cmd}", l
PY
# Nothing is left in the queue once the sweep is over.
slurm_wait_empty 15

# The journal and the manifest equal those of the local sweep, apart from what differs
# between two sweeps anyway (times, the space's path and hash, the engine's launcher) and
# what Slurm adds (the job, and the GPU Slurm chose, which the engine reports).
python3 - local/out/syn cluster/out/syn <<'PY' || fail "the Slurm sweep differs from the local one"
import json, sys
TIMES = {"wall_s", "started", "finished", "study_elapsed_s", "conditions"}
def trials(d):
    out = {}
    for line in open(d + "/trials.jsonl"):
        r = json.loads(line)
        for k in TIMES | {"slurm"}:
            r.pop(k, None)
        (r.get("metrics") or {}).pop("cuda_visible_devices", None)
        out[r["id"]] = r
    return out
a, b = trials(sys.argv[1]), trials(sys.argv[2])
assert a.keys() == b.keys(), (sorted(a), sorted(b))
for i in a:
    assert a[i] == b[i], f"trial {i}:\n local {a[i]}\n slurm {b[i]}"
def manifest(d):
    m = json.load(open(d + "/manifest.json"))
    for k in ("created", "study_dir", "space", "space_hash", "engine"):
        m.pop(k)
    m["budget"].pop("wall_time_used_s")
    for part in ("measured", "verified"):
        for sect in ("median", "spread"):
            m[part][sect].pop("cuda_visible_devices", None)
    return m
ma, mb = manifest(sys.argv[1]), manifest(sys.argv[2])
assert ma == mb, f"manifests differ:\n{json.dumps(ma, sort_keys=True)}\n{json.dumps(mb, sort_keys=True)}"
PY

# The batch pattern: one allocation of 2 generic resources runs the sweep with --workers 2,
# each trial a job step (srun --exclusive -n1 --gres=gpu:1) inside it.
write_space batch.yaml <<'YAML'
study: batch
engine:
  command: [@ENGINE@]
  env: {SYNTH_SLOW_START: "0.5"}
  timeout: 60
  launcher: {slurm: {gres: "gpu:1", extra: [--exclusive]}}
objective: {metric: tps, direction: maximize}
constraints: [ppl <= 2.4]
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: 512, step: 128}
strategy: grid
verify: {top: 1, repeats: 2}
YAML
rm -f live.log
SYNTH_LIVE_DIR=$T/live TUNER=$TUNER timeout 120 sbatch --wait --parsable --gres=gpu:2 --ntasks=2 \
    --output="$T/batch.log" "$ROOT/examples/slurm/sweep.sbatch" batch.yaml --out "$T/bout" \
    >batch.id || { cat batch.log; slurm_fail "the batch job failed"; }
batch_id=$(cat batch.id)
tr=bout/batch/trials.jsonl
[ "$(n_search $tr)" -ge 4 ] && [ "$(verify_lines $tr | wc -l)" -ge 2 ] ||
    { cat batch.log; fail "want 4 search runs and the verification runs"; }
[ "$(sort -n live.log | tail -1)" -eq 2 ] || fail "the two steps never ran at once"
python3 - "$tr" "$batch_id" <<'PY' || { cat batch.log; fail "trials are not steps of the batch job"; }
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
steps = set()
for r in recs:
    s = r["slurm"]
    assert s["job"] == sys.argv[2], f"trial {r['id']} ran in job {s['job']}, not the batch job {sys.argv[2]}"
    assert s["name"] == f"tuner.batch.{r['id']}", s
    assert s["step"] not in steps, f"step {s['step']} twice"
    steps.add(s["step"])
    assert r["status"] == "ok", r
# Each step got one of the two generic resources, and both were used.
assert {r["metrics"]["cuda_visible_devices"] for r in recs} == {"0", "1"}, [r["metrics"] for r in recs]
PY
expect_contains batch.log "manifest:"
slurm_wait_empty 15
echo "PASS"
