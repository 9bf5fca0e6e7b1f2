# common.sh: the setup every device-call script (docs/gpu_logs/sNN/callN/run.sh) shares, sourced
# from the repository root on the device machine: unpack the carried binaries (bins.tgz, built
# for sm_90 on the CPU machine), point the loader at them and at CUDA, and define el (print with
# seconds since the start) and ms (a decode-profile log's JSON lines as one line a run).
# Usage: B=.carry/sNN; . docs/gpu_logs/common.sh   -> $N (the binaries), $T (the results folder)
set -u
(cd "$B" && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new
T=$OUT/${CALL:-c}
mkdir -p "$T"
t0=$(date +%s)
el() { echo "[$(($(date +%s) - t0)) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-10s %.4f ms" % (d["run"], d["ms_per_step"]))
    else: print("  %-10s verify %d rows %.4f ms = %.2f steps" % (d["run"], d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))'; }
# The E4B-sized random model in the background (43-90 s): e4b_model; wait $PM before using it.
e4b_model() {
    python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 \
        > "$T/make.log" 2>&1 &
    PM=$!
}
# The correctness block a change must pass before it is kept (session 29's calls repeated it):
# the op test and test_gpu.sh steps 2 3 5 side by side (never beside a timing), then the
# mid-sized twin against the CPU. Logs under $T; one line of verdict each.
correctness() {
    timeout 200 $N/cuda_ops ops > $T/ops.txt 2>&1 & local p1=$!
    GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3 5" LOG_DIR=$T/tests timeout 300 \
        scripts/test_gpu.sh > $T/test235.txt 2>&1 & local p2=$!
    wait $p1; el "ops rc $?"; grep -E "FAIL|differ|all agree|expected" $T/ops.txt | cut -c1-200 | head -8
    python3 tools/make_e4b_random.py /tmp/mid --mid --prompts 1 --prompt-len 32 --hf-new-tokens 2 \
        > $T/make_mid.log 2>&1; el "mid rc $?"
    timeout 120 $N/cuda_ops model /tmp/mid/model > $T/mid_model.txt 2>&1; el "mid model rc $?"
    tail -4 $T/mid_model.txt
    wait $p2; el "steps 2 3 5 rc $?"
    grep -E "FAIL|greedy output|all GPU|identical;" $T/test235.txt | cut -c1-160 | head -8
    rm -rf $T/tests/spec_*
}
# The code a change is measured against, in the same call (session 30: five calls compared
# experiments with a default that the experiments' own code had slowed by 0.09 ms; only the
# previous binary beside it showed that). Carry the previous code's cuda_ops, built the same
# way, as $B/old/cuda_ops; `baseline LABEL` runs its defaults twice in a process of its own.
baseline() {
    DECODE_PROFILE_CUSTOM="$1:;${1}b:" timeout 120 $B/old/cuda_ops decode-profile /tmp/e4b/model \
        256 128 > $T/$1.txt 2>&1
    el "$1 rc $?"; ms $T/$1.txt
}
# One traced run (session 30's calls repeated this block): `traced NAME [SETTINGS]` runs 64 E4B
# steps of decode-profile with DECODE_PROFILE_TRACE and the settings (space-separated NAME=VALUE),
# summarises the timeline (bench/trace_step.py, step 30 listed) and prints its per-layer table.
# BIN=DIR picks another binary folder than $N (e.g. $B/old).
traced() {
    local name=$1
    shift
    DECODE_PROFILE_CUSTOM="$name:$*" DECODE_PROFILE_TRACE=$T/trace_$name.csv timeout 100 \
        ${BIN:-$N}/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/traced_$name.txt 2>&1
    el "traced $name rc $?"
    python3 bench/trace_step.py $T/trace_$name.csv 30 > $T/trace_step_$name.txt 2>&1
    el "trace_step $name rc $?"
    sed -n '/^layers/,$p' $T/trace_step_$name.txt | head -14
    gzip -f $T/trace_$name.csv
}
# The checks a kernel change must pass, side by side and untimed (sessions 37-38 wrote them out in
# each call's script): `sanitized_checks` runs racecheck, memcheck and synccheck over the small op
# test, the full op test and test_gpu.sh steps 2 3 5 on $N, then prints a verdict line each.
# Never beside a timing; about 250-300 s on the H200 (session 41).
sanitized_checks() {
    local P="" p
    timeout 420 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small \
        > $T/racecheck.log 2>&1 & P="$P $!"
    timeout 420 compute-sanitizer --tool memcheck --error-exitcode 3 $N/cuda_ops ops small \
        > $T/memcheck.log 2>&1 & P="$P $!"
    timeout 420 compute-sanitizer --tool synccheck --error-exitcode 3 $N/cuda_ops ops small \
        > $T/synccheck.log 2>&1 & P="$P $!"
    timeout 330 $N/cuda_ops ops > $T/ops.txt 2>&1 & P="$P $!"
    GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3 5" LOG_DIR=$T/tests timeout 330 \
        scripts/test_gpu.sh > $T/test235.txt 2>&1 & P="$P $!"
    for p in $P; do wait $p; echo "pid rc $?"; done
    el "checks done"
    grep -E "FAIL|differ|all agree|expected" $T/ops.txt | cut -c1-200 | head -6
    grep -c "Race reported" $T/racecheck.log; tail -1 $T/racecheck.log | cut -c1-200
    tail -1 $T/memcheck.log | cut -c1-200
    tail -1 $T/synccheck.log | cut -c1-200
    grep -E "FAIL|greedy output|all GPU|identical;" $T/test235.txt | cut -c1-160 | head -8
    rm -rf $T/tests
}
# Main's binary beside the new one on the E4B-sized model (sessions 39-40 wrote this block out in
# each call): `versus TAG 'RUNS'` runs $B/old's defaults, then $N with DECODE_PROFILE_CUSTOM=RUNS
# (e.g. 'dflt:;mma:GEMMA_CUDA_MLP=mma'), each in a process of its own, decode steps and verify
# passes over $VERIFY positions (default "2 4 5 8"); logs verify_old_TAG.txt / verify_new_TAG.txt,
# one line a run. Call it twice (TAG a, b) to see the spread.
versus() {
    DECODE_PROFILE_VERIFY="${VERIFY:-2 4 5 8}" DECODE_PROFILE_CUSTOM="old$1:" timeout 60 \
        $B/old/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify_old_$1.txt 2>&1
    el "verify old $1 rc $?"; ms $T/verify_old_$1.txt
    DECODE_PROFILE_VERIFY="${VERIFY:-2 4 5 8}" DECODE_PROFILE_CUSTOM="$2" timeout 90 \
        $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify_new_$1.txt 2>&1
    el "verify new $1 rc $?"; ms $T/verify_new_$1.txt
}
