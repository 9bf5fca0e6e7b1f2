# Session 26 call 1: bench/mlp_slice.cu (E4B's MLP with a block owning a slice of the
# intermediate dimension, down stored transposed), built here for sm_90 with
#   nvcc -O3 -arch=sm_90 -std=c++17 -o .carry/s26/mlp_slice bench/mlp_slice.cu
set -u
T=$OUT/call1; mkdir -p "$T"
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv | tee "$T/gpu.txt"
.carry/s26/mlp_slice 2>&1 | tee "$T/mlp_slice.txt"
MLP_REPS=40 .carry/s26/mlp_slice 2>&1 | tee "$T/mlp_slice_again.txt"
