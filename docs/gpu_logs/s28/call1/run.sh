# session 28, call 1: bench/step_slice.cu's L2 rows prepared in session 27 (each stream's
# producer asks L2 for its share of the next 8 or 24 MB of the step's weights once its rows are
# asked for or have landed), beside step_shape.cu's chains (the engine's layout) from the same
# call. Built on the CPU machine: nvcc -O3 -arch=sm_90 -std=c++17.
set -u
mkdir -p $OUT/c1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $OUT/c1/gpu.txt
timeout 250 .carry/s28/step_slice > $OUT/c1/step_slice.txt 2>&1; echo "rc $?"; cat $OUT/c1/step_slice.txt
timeout 200 .carry/s28/step_shape > $OUT/c1/step_shape.txt 2>&1; echo "rc $?"; cat $OUT/c1/step_shape.txt
