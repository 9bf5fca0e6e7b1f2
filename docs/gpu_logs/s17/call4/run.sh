# session 17, call 4: the bf16 unpack by shift and mask (new, a), the same with the plain lean
# kernel bounded to 6 blocks a multiprocessor (new with GEMMA_CUDA_MV_B6=1, b), against the s16
# kernels (old): E4B and small-model
# steps alternating by process, bench-matvec with a small kernel after each product; correctness
# of b: test_gpu.sh steps 1-3 and 5, memcheck and racecheck of the op test.
set -u
B=.carry/s17; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
T=$OUT/c4; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
(python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make rc $?" >> $T/make_e4b.log) & MK=$!
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l); print("  %-8s %.4f ms" % (d["run"], d["ms_per_step"]))'; }
bin() { case $1 in old) echo $B/old/cuda_ops;; a) echo $B/new/cuda_ops;; b) echo "env GEMMA_CUDA_MV_B6=1 $B/new/cuda_ops";; esac; }
for v in old a b; do BENCH_MATVEC_SMALL=1 timeout 90 $(bin $v) bench-matvec > $T/bm_$v.txt 2>&1; el "bm $v rc $?"; done
for v in old a b; do echo "$v"; grep '^|' $T/bm_$v.txt | cut -d'|' -f2,4 | tail -n +3; done
for r in 1 2; do for v in old a b; do
  DECODE_PROFILE_CUSTOM="$v$r:" timeout 60 $(bin $v) decode-profile models/gemma4-tiny 256 512 > $T/tiny_$v$r.txt 2>&1
done; done
el "tiny"; ms $T/tiny_*.txt
wait $MK; el "$(tail -1 $T/make_e4b.log)"
for r in 1 2 3; do for v in old a b; do
  DECODE_PROFILE_CUSTOM="$v$r:;$v${r}b:" timeout 100 $(bin $v) decode-profile /tmp/e4b/model 256 128 > $T/e4b_$v$r.txt 2>&1
done; el "e4b round $r"; ms $T/e4b_*$r.txt; done
N=$B/new; export GEMMA_CUDA_MV_B6=1
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="1 2 3" LOG_DIR=$T/tests timeout 240 scripts/test_gpu.sh > $T/test123.txt 2>&1; el "steps 1-3 rc $?"
grep -E "FAIL|greedy output|all GPU" $T/test123.txt | cut -c1-180 | head -8
wait $P1; r1=$?; wait $P2; r2=$?; el "memcheck rc $r1, racecheck rc $r2"; tail -n 1 $T/memcheck.log $T/racecheck.log
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS=5 SPEC_PROMPTS=2 SPEC_NEW_TOKENS=96 SAN_TIMEOUT=40 LOG_DIR=$T/tests5 timeout 140 scripts/test_gpu.sh > $T/test5.txt 2>&1; el "step 5 rc $?"
grep -E "FAIL|all GPU" $T/test5.txt | head -4
cd $OUT && tar czf c4.tgz c4 && rm -rf c4
