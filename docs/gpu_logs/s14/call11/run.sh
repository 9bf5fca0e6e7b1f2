# session 14, call 11: bench/step_shape.cu: the rows and split layouts with a product's arithmetic (bf16 weights against x through L1)
# matvec.cu's decode layout against the same rows dealt evenly over a resident grid.
T=$OUT/c11; mkdir -p $T
nvcc -O3 -arch=sm_90 -o /tmp/step_shape bench/step_shape.cu > $T/build.log 2>&1 || { cat $T/build.log; exit 1; }
for i in 1; do timeout 60 /tmp/step_shape > $T/step_shape$i.txt 2>&1; echo "rc $?"; cat $T/step_shape$i.txt; done
