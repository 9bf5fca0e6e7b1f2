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
