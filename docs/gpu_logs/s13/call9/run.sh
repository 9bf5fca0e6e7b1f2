# session 13, call 9: call 8 again with the demangled name ncu prints ("(int)4"): the general matvec kernel at n = 4 in
# E4B verify passes against the lean kernel in decode steps - time, DRAM and L1 throughput, issue activity and the
# stall reasons per issued instruction.
set -u
B=.carry/s13c7; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
T=$OUT/c9; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
python3 tools/make_e4b_random.py /tmp/e4b --prompts 2 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; el "make rc $?"
P=smsp__average_warps_issue_stalled
M="gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__grid_size,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,${P}_long_scoreboard_per_issue_active.ratio,${P}_lg_throttle_per_issue_active.ratio,${P}_mio_throttle_per_issue_active.ratio,${P}_short_scoreboard_per_issue_active.ratio,${P}_wait_per_issue_active.ratio,${P}_math_pipe_throttle_per_issue_active.ratio,${P}_not_selected_per_issue_active.ratio,${P}_barrier_per_issue_active.ratio,${P}_tex_throttle_per_issue_active.ratio,${P}_no_instruction_per_issue_active.ratio,${P}_selected_per_issue_active.ratio"
DECODE_PROFILE_CUSTOM="new:" DECODE_PROFILE_VERIFY="4" timeout 200 ncu --kernel-name-base demangled --kernel-name regex:"matvec_kernel<__nv_bfloat16, \(int\)4," --launch-skip 40 --launch-count 4 --cache-control none --clock-control none --metrics $M --csv $B/new/cuda_ops decode-profile /tmp/e4b/model 256 16 > $T/ncu_general_n4.csv 2> $T/ncu_general_n4.err; el "ncu general rc $?"
DECODE_PROFILE_CUSTOM="new:" timeout 200 ncu --kernel-name-base demangled --kernel-name regex:"matvec1_kernel" --launch-skip 400 --launch-count 4 --cache-control none --clock-control none --metrics $M --csv $B/new/cuda_ops decode-profile /tmp/e4b/model 256 16 > $T/ncu_lean_n1.csv 2> $T/ncu_lean_n1.err; el "ncu lean rc $?"
python3 - $T <<'PY'
import csv,sys,io,collections
for f in ("ncu_general_n4","ncu_lean_n1"):
    txt=open(f"{sys.argv[1]}/{f}.csv").read(); i=txt.find('"ID"')
    rows=list(csv.DictReader(io.StringIO(txt[i:]))) if i>=0 else []
    by=collections.OrderedDict()
    for r in rows: by.setdefault((r["ID"],r["Kernel Name"][:60]),{})[r["Metric Name"].replace("smsp__average_warps_issue_stalled_","stall_").replace("_per_issue_active.ratio","")]=r["Metric Value"]
    print("==",f)
    for k,v in by.items(): print(k[1], " ".join(f"{a}={b}" for a,b in v.items()))
PY
cd $OUT && tar czf c9.tgz c9 && rm -rf c9
