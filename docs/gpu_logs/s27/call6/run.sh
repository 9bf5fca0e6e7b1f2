# session 27, call 6: bench/step_slice.cu with the occupancy of its kernel printed (does the next
# launch's ring fit beside the running one's?) and its chains run again with the preferred
# shared-memory carveout at 100 % (built here: nvcc -O3 -arch=sm_90 -std=c++17).
set -u
mkdir -p $OUT/c6
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $OUT/c6/gpu.txt
timeout 200 .carry/s27/step_slice > $OUT/c6/step_slice.txt 2>&1; echo "rc $?"; cat $OUT/c6/step_slice.txt
