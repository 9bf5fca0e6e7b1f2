# session 14, call 2: bench/step_shape.cu with product-shaped streams (rows of 5120 bytes):
# matvec.cu's decode layout against the same rows dealt evenly over a resident grid.
set -u
T=$OUT/c2; mkdir -p $T
nvcc -O3 -arch=sm_90 -o /tmp/step_shape bench/step_shape.cu > $T/build.log 2>&1 || { cat $T/build.log; exit 1; }
for i in 1 2; do timeout 60 /tmp/step_shape > $T/step_shape$i.txt 2>&1; echo "rc $?"; cat $T/step_shape$i.txt; done
