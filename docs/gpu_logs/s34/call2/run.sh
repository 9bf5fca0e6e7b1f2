# session 34, call 2: why the whole-MLP kernel is 3.3 times slower over 8 inputs than over 1
# (call 1: 121 us a layer against 37; 4 inputs 59) - Nsight Compute on one launch of each form
# (a prefill chunk's launches use the same forms), with the stall reasons by SASS instruction;
# and the verify products (matvec_rows_kernel over 8 inputs) and the attention for comparison.
B=.carry/s34 CALL=c2; . docs/gpu_logs/common.sh
[ -f /tmp/e4b/model/config.json ] || { e4b_model; wait $PM; el "e4b model rc $?"; }
S="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section InstructionStats --section SourceCounters --section MemoryWorkloadAnalysis"
prof() { # name regex [env]
    local name=$1 re=$2; shift 2
    env "$@" DECODE_PROFILE_VERIFY="4 8" DECODE_PROFILE_CUSTOM="p:" timeout 200 ncu --kernel-name-base demangled \
        -k "regex:$re" -c 1 $S -o $T/$name $N/cuda_ops decode-profile /tmp/e4b/model 32 2 > $T/ncu_$name.log 2>&1
    el "ncu $name rc $?"
    ncu -i $T/$name.ncu-rep --print-details all > $T/$name.txt 2>&1
    ncu -i $T/$name.ncu-rep --page source --print-source sass --csv > $T/${name}_sass.csv 2>&1
    grep -E "Duration|Registers Per|Achieved Occupancy|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Executed Ipc A|Memory Throughput|Spill|Stall" $T/$name.txt | head -24 | cut -c1-150
}
prof mlp8 'mlp_kernel<.int.8'
prof mlp4 'mlp_kernel<.int.4'
prof mlp1 'mlp_kernel<.int.1'
python3 - $T <<'PY'
import csv, sys, os
T = sys.argv[1]
for name in ("mlp8", "mlp4", "mlp1"):
    p = os.path.join(T, name + "_sass.csv")
    try:
        rows = list(csv.reader(open(p)))
    except Exception as e:
        print(name, "no csv", e); continue
    hi = next((i for i, r in enumerate(rows) if "Source" in r), None)
    if hi is None:
        print(name, "no header", rows[:2]); continue
    h = rows[hi]; body = rows[hi + 1:]
    print(name, "columns:", [c for c in h][:40])
    col = next((i for i, c in enumerate(h) if c.startswith("Warp Stall Sampling (All")), None)
    if col is None: continue
    def f(x):
        try: return float(x.replace(",", ""))
        except: return 0.0
    tot = sum(f(r[col]) for r in body if len(r) > col) or 1
    top = sorted(body, key=lambda r: -f(r[col]) if len(r) > col else 0)[:25]
    print(name, "total samples", tot)
    for r in top:
        print("  %5.1f%%  %s" % (100 * f(r[col]) / tot, r[1][:110] if len(r) > 1 else r))
PY
cd $OUT && tar czf c2.tgz c2
