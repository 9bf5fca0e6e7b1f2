# session 40, call 1: why racecheck reports the tensor-core MLP's gate/up ring reads.
# new = mlp_mma.cu as session 39 call 3 (main's 69d287f reverted) plus an experiment switch
# MLPM_EXP: 1 = gate/up read nothing from the ring (zeros), 2 = gate/up's weight fragments
# through ldmatrix with each lane waiting for the row it addresses (down's form, never
# reported). `cuda_ops ops mlp` runs the whole-MLP test alone. Racecheck in hazard mode (the
# addresses and threads) for the default, analysis mode for 1 and 2, synccheck; then E4B
# timings old / mma / mma exp 2.
B=.carry/s40 CALL=c1; . docs/gpu_logs/common.sh
e4b_model
RC="compute-sanitizer --tool racecheck --kernel-name kns=mlp_mma"
P=""
timeout 240 $RC --racecheck-report hazard --print-limit 60 $N/cuda_ops ops mlp > $T/rc_hazard0.log 2>&1 & P="$P $!"
MLPM_EXP=1 timeout 240 $RC $N/cuda_ops ops mlp > $T/rc_exp1.log 2>&1 & P="$P $!"
MLPM_EXP=2 timeout 240 $RC $N/cuda_ops ops mlp > $T/rc_exp2.log 2>&1 & P="$P $!"
timeout 240 compute-sanitizer --tool synccheck --kernel-name kns=mlp_mma $N/cuda_ops ops mlp > $T/sync0.log 2>&1 & P="$P $!"
( timeout 100 $N/cuda_ops ops mlp > $T/ops_mlp0.txt 2>&1; echo "ops mlp 0 rc $?"
  MLPM_EXP=2 timeout 100 $N/cuda_ops ops mlp > $T/ops_mlp2.txt 2>&1; echo "ops mlp 2 rc $?" ) & P="$P $!"
for p in $P; do wait $p; echo "pid rc $?"; done
el "checks done"
for f in rc_hazard0 rc_exp1 rc_exp2 sync0; do echo "== $f"; grep -c "hazard\|Race reported" $T/$f.log; tail -2 $T/$f.log | cut -c1-200; done
grep -o "Read access at [^ ]* in [^ ]*\|Write access at [^ ]* in [^ ]*" $T/rc_exp1.log $T/rc_exp2.log | sort | uniq -c | head -20
grep -v "^=========     " $T/rc_hazard0.log | head -30 | cut -c1-300
grep -E "FAIL|differ|all agree" $T/ops_mlp0.txt $T/ops_mlp2.txt | cut -c1-200 | head -8
cd $OUT && tar czf c1.tgz c1 && cd - > /dev/null
wait $PM; el "e4b model rc $?"
V="2 4 5 8"
DECODE_PROFILE_VERIFY="$V" DECODE_PROFILE_CUSTOM="old:" \
    timeout 60 $B/old/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify_old.txt 2>&1
el "verify old rc $?"; ms $T/verify_old.txt
DECODE_PROFILE_VERIFY="$V" DECODE_PROFILE_CUSTOM="mma0:GEMMA_CUDA_MLP=mma;mma2:GEMMA_CUDA_MLP=mma MLPM_EXP=2" \
    timeout 90 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify_new.txt 2>&1
el "verify new rc $?"; ms $T/verify_new.txt
cd $OUT && tar czf c1.tgz c1
