# session 30, call 7: the final code (the kernels are session 29's, 5cba74d) through the new
# common.sh helpers: correctness (op test, test_gpu.sh steps 2 3 5, mid twin), then baseline
# against itself ($B/old is a link to $B/new here: an A / A run, the spread between processes).
B=.carry/s30g CALL=c7; . docs/gpu_logs/common.sh
e4b_model
correctness
wait $PM; el "e4b model rc $?"
baseline a1
DECODE_PROFILE_CUSTOM="b1:;b1b:" timeout 120 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/b1.txt 2>&1; el "b1 rc $?"; ms $T/b1.txt
baseline a2
cd $OUT && tar czf c7.tgz c7
