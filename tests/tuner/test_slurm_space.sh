# The slurm launcher's keys as the space loader checks them, what the study's snapshot keeps of
# them, and what a sweep does when the Slurm commands fail (no cluster needed: fake squeue and
# srun on the PATH stand in for a broken installation).
source "$TESTS_DIR/sweep_lib.sh"

space() { # space FILE LAUNCHER: a one-knob space with the given launcher line
    write_space "$1" <<YAML
study: s
engine:
  command: [@ENGINE@]
  timeout: 10m
  launcher: $2
objective: {metric: tps, direction: maximize}
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: 256, step: 128}
strategy: grid
verify: {top: 1, repeats: 1}
YAML
}

# refused LAUNCHER TEXT: the space is refused with an error that contains TEXT.
refused() {
    space bad.yaml "$1"
    if "$TUNER" sweep bad.yaml --dry-run >bad.out 2>bad.err; then fail "accepted launcher: $1"; fi
    expect_contains bad.err "$2"
}
refused '{slurm: {partiton: gpu}}' "bad.yaml:5: key 'engine.launcher.slurm.partiton'"
refused '{slurm: {time: 5m}}' "key 'engine.launcher.slurm.time': 300 s is shorter than engine.timeout (600 s)"
refused '{slurm: {extra: [--job-name=x]}}' "key 'engine.launcher.slurm.extra[0]': '--job-name=x': the tuner sets --job-name itself"
refused '{slurm: {extra: [-n2]}}' "the tuner sets -n itself"
refused '{slurm: {extra: [exclusive]}}' "'exclusive' is not an srun option"
refused '{slurm: {gres: "gpu 1"}}' "key 'engine.launcher.slurm.gres': 'gpu 1' has a blank"
refused '{slurm: {extra: --exclusive}}' "key 'engine.launcher.slurm.extra'"
refused '{slurm: [gpu]}' "key 'engine.launcher.slurm'"
refused '{pbs: {queue: q}}' "key 'engine.launcher.pbs'"
refused '"srun -N1"' "the template must contain {cmd}"

# Good ones: the map form and the template form.
space good.yaml '{slurm: {partition: gpu, gres: "gpu:1", time: 20m, extra: [--exclusive, --mem=4G]}}'
"$TUNER" sweep good.yaml --dry-run >dry.out 2>dry.err || { cat dry.err; fail "dry run of a slurm launcher"; }
cat dry.out dry.err >dry.all
expect_contains dry.all "launcher:   srun --job-name=tuner.STUDY.TRIAL --nodes=1 --ntasks=1 --partition=gpu --gres=gpu:1 --time=0-00:20:00 --exclusive --mem=4G {cmd}"
space tmpl.yaml '"srun -N1 --gres=gpu:1 {cmd}"'
"$TUNER" sweep tmpl.yaml --dry-run >/dev/null 2>dry.err || { cat dry.err; fail "dry run of a template launcher"; }
# --gpus names this machine's GPUs: refused with the slurm launcher, where Slurm picks them.
rc=0
"$TUNER" sweep good.yaml --gpus 0,1 --dry-run >gpus.out 2>gpus.err || rc=$?
[ $rc -eq 2 ] || { cat gpus.err; fail "--gpus with the slurm launcher: status $rc, want 2"; }
expect_contains gpus.err "--gpus pins trials to this machine's GPUs, but the space good.yaml runs them as Slurm jobs"

# Slurm commands that fail: a squeue that cannot reach the controller stops the sweep before
# anything runs (the queue cannot be checked for jobs left by an earlier sweep).
mkdir bin
cat >bin/squeue <<'SH'
#!/bin/sh
echo "squeue: error: Unable to contact slurm controller (connect failure)" >&2
exit 1
SH
chmod +x bin/squeue
rc=0
PATH=$T/bin:$PATH "$TUNER" sweep good.yaml >down.out 2>down.err || rc=$?
[ $rc -eq 1 ] || { cat down.err; fail "a sweep with an unreachable controller: status $rc, want 1"; }
expect_contains down.err "cannot list the Slurm queue (squeue): squeue: error: Unable to contact slurm controller"
expect_contains down.err "cannot check the Slurm queue for jobs of study 's'"
[ ! -s out/s/trials.jsonl ] || fail "a trial ran although the queue could not be checked"

# An srun that is not there: each trial fails with the reason, the sweep goes on. The study's
# snapshot keeps the launcher (so the space's hash covers it).
cat >bin/squeue <<'SH'
#!/bin/sh
exit 0
SH
rc=0
PATH=$T/bin "$TUNER" sweep good.yaml >nosrun.out 2>nosrun.err || rc=$?
[ $rc -eq 3 ] || { cat nosrun.err; fail "a sweep without srun: status $rc, want 3 (no feasible point)"; }
expect_contains out/s/trials.jsonl "cannot execute srun"
expect_contains out/s/trials.jsonl '"slurm":{"name":"tuner.s.1","job":null,"step":null}'
python3 - out/s/space.json <<'PY' || fail "the snapshot lacks the launcher"
import json, sys
l = json.load(open(sys.argv[1]))["engine"]["launcher"]
assert l == {"slurm": {"partition": "gpu", "gres": "gpu:1", "time_s": 1200, "extra": ["--exclusive", "--mem=4G"]}}, l
PY
echo "PASS"
