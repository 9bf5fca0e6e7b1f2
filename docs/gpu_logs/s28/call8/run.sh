# session 28, call 8: bench/step_mega.cu (the whole step as one persistent kernel) with its
# producer keeping at most 1 or 2 stages in flight (40-80 KB a multiprocessor) - does the
# dependency's 1.8 us of fence + counter shrink as the queue behind the weights does? Built on
# the CPU machine: nvcc -O3 -arch=sm_90 -std=c++17.
set -u
mkdir -p $OUT/c8
timeout 200 .carry/s28/step_mega > $OUT/c8/step_mega.txt 2>&1; echo "rc $?"; cat $OUT/c8/step_mega.txt
