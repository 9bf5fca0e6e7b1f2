# session 32, call 1: mlp.cu's paced L2 prefetcher beside the decode step (GEMMA_CUDA_L2A=
# MB:GBPS:WARPS:POLICY[:SKIP]; a root node of the step's graph asking L2 for each MLP's first
# rows from the end of the MLP before it). One process, alternating, against the switch off and
# the previous binary (main before the change) in its own process. Then session 31's phase
# timing of the fused attention + o kernel (branch s31-attn-o-phases), if carried.
B=.carry/s32 CALL=c1; . docs/gpu_logs/common.sh
e4b_model; wait $PM; el "e4b model rc $?"
baseline old
DECODE_PROFILE_CUSTOM="off:;a16:GEMMA_CUDA_L2A=16:1000:16:0;a16s:GEMMA_CUDA_L2A=16:1000:16:0:20;a8:GEMMA_CUDA_L2A=8:600:16:0:20;a24:GEMMA_CUDA_L2A=24:1500:32:0:20;a16e:GEMMA_CUDA_L2A=16:1000:16:1:20;offb:;a16f:GEMMA_CUDA_L2A=16:3000:64:0:20;a16b:GEMMA_CUDA_L2A=16:1000:16:0:20" \
    timeout 240 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/ab.txt 2>&1; el "ab rc $?"; ms $T/ab.txt
if [ -x $B/ph/cuda_ops ]; then timeout 60 $B/ph/cuda_ops attn-o-phases > $T/phases.txt 2>&1; el "phases rc $?"; cat $T/phases.txt; fi
cd $OUT && tar czf c1.tgz c1
