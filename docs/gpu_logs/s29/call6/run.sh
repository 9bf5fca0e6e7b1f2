# session 29, call 6: a timeline of E4B's decode steps (CUPTI activity records of every kernel,
# DECODE_PROFILE_TRACE; tests/kernels/cuda_ops_trace.h) and what each kernel adds to a step
# (bench/trace_step.py). First the same steps untraced, to see what tracing costs.
B=.carry/s29d CALL=c6; . docs/gpu_logs/common.sh
e4b_model; wait $PM; el "e4b model rc $?"
DECODE_PROFILE_CUSTOM="base:" timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/base.txt 2>&1; el "base rc $?"; ms $T/base.txt
DECODE_PROFILE_CUSTOM="traced:" DECODE_PROFILE_TRACE=$T/trace.csv timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/traced.txt 2>&1; el "traced rc $?"; ms $T/traced.txt; tail -3 $T/traced.txt
python3 bench/trace_step.py $T/trace.csv 30 > $T/trace_step.txt 2>&1; el "trace_step rc $?"; head -60 $T/trace_step.txt
gzip $T/trace.csv; cd $OUT && tar czf c6.tgz c6
