#!/bin/bash
# Session 17, call 1: step_shape with x in bf16 and the ticket epilogue (bench/step_shape.cu).
set -x
nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/ss bench/step_shape.cu || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $OUT/gpu.txt
STEP_SHAPE_ONE=1 /tmp/ss > $OUT/one.txt 2>&1
/tmp/ss > $OUT/step_shape.txt 2>&1
STEP_SHAPE_ONE=1 /tmp/ss > $OUT/one_again.txt 2>&1
