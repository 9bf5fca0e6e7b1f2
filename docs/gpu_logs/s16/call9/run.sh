# session 16, call 9: bench/step_mega.cu with the done-signal three ways (signal_done), traced.
set -u
T=$OUT/c9; mkdir -p $T
nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/step_mega bench/step_mega.cu && timeout 120 /tmp/step_mega > $T/step_mega.txt 2>&1; echo "rc $?"; cat $T/step_mega.txt
