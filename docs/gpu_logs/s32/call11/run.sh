# session 32, call 11: mlp.cu's producer loop moved into bulk.cuh's ring_producer (shared with
# bench/read_rate.cu; same code, slightly different PTX for the producer thread). The op test
# (its whole-MLP checks: every row of a launch bit for bit the same ops alone) beside the E4B
# model's making, then new and main's binary (dfec9b9) in alternating processes of their own.
B=.carry/s32 CALL=c11; . docs/gpu_logs/common.sh
e4b_model
timeout 150 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"; grep -E "FAIL|differ|all agree" $T/ops.txt | cut -c1-200 | head -5
wait $PM; el "e4b model rc $?"
for r in 1 2; do
    DECODE_PROFILE_CUSTOM="new$r:" timeout 60 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/new$r.txt 2>&1; el "new$r rc $?"; ms $T/new$r.txt
    baseline old$r
done
cd $OUT && tar czf c11.tgz c11
