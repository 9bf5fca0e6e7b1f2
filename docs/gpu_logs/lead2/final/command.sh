# The lead's last device call (run tool, carry [".carry/lead", ".carry/pb"]; 94 s): the final code
# (matmul_argmax on the GPU, attention back to its two kernels) - test_gpu.sh steps 1-3 and 5,
# memcheck and racecheck of the op test - and the small model's speculative bench with this build
# (.carry/lead) and with p's final code (9900a49, .carry/pb), both sm_90-only, stripped.
for d in lead pb; do (cd .carry/$d && tar xzf bins.tgz); done; export LD_LIBRARY_PATH=$PWD/.carry/lead:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16; B=.carry/lead; T=$OUT/tests; mkdir -p $T;
timeout 100 compute-sanitizer --tool racecheck --error-exitcode 3 $B/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $B/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
GPU_BIN_DIR=$B KEEP_GOING=1 GPU_TEST_STEPS="1 2 3" LOG_DIR=$T timeout 100 scripts/test_gpu.sh > $T/test123.txt 2>&1; echo "steps 1-3 rc $?"; grep -E "^ops:|FAIL|greedy output|ppl:" $T/test123.txt | head
GPU_BIN_DIR=$B KEEP_GOING=1 GPU_TEST_STEPS=5 SPEC_PROMPTS=2 SPEC_NEW_TOKENS=96 SAN_TIMEOUT=40 LOG_DIR=$T timeout 100 scripts/test_gpu.sh > $T/test5.txt 2>&1; echo "step 5 rc $?"; grep -E "FAIL|identical|SUMMARY" $T/test5.txt | head
wait $P1; echo "memcheck rc $?"; wait $P2; echo "racecheck rc $?"; tail -n1 $T/memcheck.log $T/racecheck.log
for v in pb lead; do GPU_BIN_DIR=.carry/$v PROMPTS=2 NEW_TOKENS=128 REPEATS=1 WARMUP=1 OUT=$T/spec_$v.md timeout 40 bench/bench_spec_gpu.sh > $T/spec_$v.log 2>&1; echo "spec $v rc $?"; grep -E "^\| [0-9] \|" $T/spec_$v.md | cut -c1-120; done
cd $OUT && tar czf tests.tgz tests && rm -rf tests
