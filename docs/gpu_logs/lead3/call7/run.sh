# lead call 7 (short): HEAD 2330187 (switches moved to backend_cuda_env.c) - whole-model checks (test_gpu.sh steps 2-3), a bad switch refused, the old split rule still accepted.
set -u
(cd .carry/lead7 && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/.carry/lead7:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
B=.carry/lead7/bin; T=$OUT/lead7; mkdir -p $T
GPU_BIN_DIR=$B KEEP_GOING=1 GPU_TEST_STEPS="2 3" LOG_DIR=$T/tests timeout 90 scripts/test_gpu.sh > $T/test23.txt 2>&1; echo "steps 2-3 rc $?"
grep -E "FAIL|greedy|identical" $T/test23.txt | head -9
GEMMA_CUDA_MV_SPLIT=99 ENGINE_DEVICE=cuda timeout 30 $B/engine bench models/gemma4-tiny --data models/gemma4-tiny/eval > $T/bad_switch.out 2> $T/bad_switch.err; echo "bad switch rc $? (want non-zero)"; tail -2 $T/bad_switch.err
GEMMA_CUDA_MV_SPLIT=8 timeout 30 $B/cuda_ops model models/gemma4-tiny > $T/split8_tiny.log 2>&1; echo "split 8 model rc $?"; grep -E "greedy|cuda:" $T/split8_tiny.log | head -3
cd $OUT && tar czf lead7.tgz lead7 && rm -rf lead7
