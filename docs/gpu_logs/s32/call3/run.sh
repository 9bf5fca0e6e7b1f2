# session 32, call 3: call 2 found the prefetcher's cost (1.27 ms a step) without a single ask
# (POLICY 8: wait and pace only) and with one warp, while the node alone (4) costs nothing.
# Does it scale with how long the branch's kernel stays resident? POLICY 16: the first 4 MLPs
# only (it exits about 0.3 ms into the step). Timelines keep the prefetcher's own rows
# (l2a_NAME.txt) to see when it starts and ends against the step.
B=.carry/s32 CALL=c3; . docs/gpu_logs/common.sh
e4b_model; wait $PM; el "e4b model rc $?"
DECODE_PROFILE_CUSTOM="off:;p8:GEMMA_CUDA_L2A=16:1000:16:8:20;p24:GEMMA_CUDA_L2A=16:1000:16:24:20;p24w1:GEMMA_CUDA_L2A=16:1000:1:24:20;s18:GEMMA_CUDA_L2A=16:1000:16:18:20;offb:" \
    timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/ab.txt 2>&1; el "ab rc $?"; ms $T/ab.txt
for v in "p8:GEMMA_CUDA_L2A=16:1000:16:8:20" "p24:GEMMA_CUDA_L2A=16:1000:16:24:20"; do
    name=${v%%:*}
    DECODE_PROFILE_CUSTOM="$v" DECODE_PROFILE_TRACE=$T/raw_$name.csv timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/traced_$name.txt 2>&1
    el "traced $name rc $?"; ms $T/traced_$name.txt
    head -1 $T/raw_$name.csv > $T/l2a_$name.txt; grep l2_ahead $T/raw_$name.csv | head -12 >> $T/l2a_$name.txt; cat $T/l2a_$name.txt
    grep -v l2_ahead $T/raw_$name.csv > $T/trace_$name.csv; python3 - $T/raw_$name.csv <<'PY'
import sys
rows=[l.strip().split(',') for l in open(sys.argv[1]) if not l.startswith('#')]
rows=sorted((int(r[0]),int(r[1]),r[2]) for r in rows)
main=[r for r in rows if 'l2_ahead' not in r[2]]
for s,e,n in [r for r in rows if 'l2_ahead' in r[2]][3:9]:
    before=[m for m in main if m[0]<=s]; after=[m for m in main if m[0]>e]
    ended=max(m[1] for m in main if m[0]<e)
    print('l2a %.1f us long; starts %.1f us after %s started; ends %.1f us after the last kernel started before it ended; next kernel starts %.1f us after it ends (%s)' % ((e-s)/1e3,(s-before[-1][0])/1e3,before[-1][2][:24],(e-ended)/1e3,(after[0][0]-e)/1e3 if after else -1,after[0][2][:24] if after else ''))
PY
    rm $T/raw_$name.csv
    python3 bench/trace_step.py $T/trace_$name.csv 30 > $T/trace_step_$name.txt 2>&1; el "trace_step $name rc $?"
    head -3 $T/trace_step_$name.txt; sed -n '/^layers/,$p' $T/trace_step_$name.txt | head -5
done
gzip -f $T/trace_*.csv
cd $OUT && tar czf c3.tgz c3
