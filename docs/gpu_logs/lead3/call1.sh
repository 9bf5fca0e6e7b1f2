# lead call 1 (L2 prefetch branch, worktree pf): correctness with the branch on, then E4B step times by lookahead and mode
set -u
(cd .carry/pf && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/.carry/pf:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
B=.carry/pf; T=$OUT/pf1; mkdir -p $T
date
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make_e4b rc $?"
date
GEMMA_CUDA_L2_AHEAD=24 GPU_BIN_DIR=$B KEEP_GOING=1 GPU_TEST_STEPS="2 3" LOG_DIR=$T/tests timeout 120 scripts/test_gpu.sh > $T/test23_l2_24.txt 2>&1; echo "steps 2-3 (L2 ahead 24) rc $?"; grep -E "FAIL|greedy|max" $T/test23_l2_24.txt | head -8
date
R="off:GEMMA_CUDA_L2_AHEAD=0;a8:GEMMA_CUDA_L2_AHEAD=8;a16:GEMMA_CUDA_L2_AHEAD=16;a24:GEMMA_CUDA_L2_AHEAD=24;a32:GEMMA_CUDA_L2_AHEAD=32;a40:GEMMA_CUDA_L2_AHEAD=40;off2:GEMMA_CUDA_L2_AHEAD=0"
R="$R;a24_bulk_last:GEMMA_CUDA_L2_AHEAD=24 GEMMA_CUDA_L2_MODE=bulk_last;a24_lines:GEMMA_CUDA_L2_AHEAD=24 GEMMA_CUDA_L2_MODE=lines;a24_lines_last:GEMMA_CUDA_L2_AHEAD=24 GEMMA_CUDA_L2_MODE=lines_last;a64:GEMMA_CUDA_L2_AHEAD=64;off3:GEMMA_CUDA_L2_AHEAD=0"
DECODE_PROFILE_CUSTOM="$R" timeout 300 $B/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_l2.txt 2>&1; echo "decode-profile rc $?"
grep -o '"run": "[^"]*", "steps": [0-9]*, "ms_per_step": [0-9.]*' $T/e4b_l2.txt
date
cd $OUT && tar czf pf1.tgz pf1 && rm -rf pf1
