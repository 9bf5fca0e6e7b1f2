# session 41, call 1. new = main with bulk.cuh's bar_consumers as barrier.sync (unaligned) instead
# of bar.sync; plus bench/ring_race (session 40) for its first run. Untimed and side by side:
# ring_race's 8 forms under racecheck (analysis and hazard reports) and synccheck; then the
# sanitized checks of new and synccheck over the small op test. Then E4B timings old / new.
B=.carry/s41 CALL=c1; . docs/gpu_logs/common.sh
e4b_model
CS="compute-sanitizer --error-exitcode 3"
P=""
for f in 0 1 2 3 4 5 6 7; do
    timeout 60 $N/ring_race $f > $T/rr_plain_$f.log 2>&1 & P="$P $!"
    timeout 90 $CS --tool racecheck $N/ring_race $f > $T/rr_race_$f.log 2>&1 & P="$P $!"
    timeout 90 $CS --tool racecheck --racecheck-report hazard --print-limit 100000 $N/ring_race $f \
        > $T/rr_hazard_$f.log 2>&1 & P="$P $!"
    timeout 90 $CS --tool synccheck $N/ring_race $f > $T/rr_sync_$f.log 2>&1 & P="$P $!"
done
for p in $P; do wait $p; done
el "ring_race done"
for f in 0 1 2 3 4 5 6 7; do
    echo "form $f: $(tail -1 $T/rr_plain_$f.log | cut -c1-80) | race: $(tail -1 $T/rr_race_$f.log | cut -c1-90)"
    echo "   hazard: $(grep -c 'hazard detected' $T/rr_hazard_$f.log) $(tail -1 $T/rr_hazard_$f.log | cut -c1-70) | sync: $(tail -1 $T/rr_sync_$f.log | cut -c1-90)"
done
timeout 330 $CS --tool synccheck $N/cuda_ops ops small > $T/synccheck.log 2>&1 & PS=$!
sanitized_checks
wait $PS; el "synccheck rc $?"; tail -1 $T/synccheck.log | cut -c1-200
grep -o "Device Frame: [^(]*\|at [^ ]* in [^ ]*" $T/synccheck.log | sort | uniq -c | sort -rn | head -8
gzip -f $T/rr_hazard_*.log $T/racecheck.log $T/synccheck.log 2>/dev/null
wait $PM; el "e4b model rc $?"
for r in a b; do versus $r "new$r:"; done
cd $OUT && tar czf c1.tgz c1
