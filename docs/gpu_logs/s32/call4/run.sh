# session 32, call 4: the fused attention + o kernel (branch s31-attn-o-phases, session 31 call
# 6's form) with a faster product phase (oh_product4: a in registers, 4 rows a lane group, one
# 16-byte remote store per 4 rows; GEMMA_CUDA_ATTN_O_PLAIN=1 = session 31's product). Call 1's
# phase timing put that phase at 6.1 us a block. The op test (its fused check: GPU against CPU,
# each row of a chunk bit for bit the row decoded alone), the phase timing both ways, one
# process alternating (fused new / unfused / fused plain), main's binary in its own process, and
# a timeline of the new form.
B=.carry/s32 CALL=c4; . docs/gpu_logs/common.sh
e4b_model
timeout 200 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"; grep -E "FAIL|differ|all agree|expected|fused" $T/ops.txt | cut -c1-200 | head -12
timeout 60 $N/cuda_ops attn-o-phases > $T/phases_new.txt 2>&1; el "phases new rc $?"; cat $T/phases_new.txt
GEMMA_CUDA_ATTN_O_PLAIN=1 timeout 60 $N/cuda_ops attn-o-phases > $T/phases_plain.txt 2>&1; el "phases plain rc $?"; sed -n 2,12p $T/phases_plain.txt
wait $PM; el "e4b model rc $?"
DECODE_PROFILE_CUSTOM="new:;off:GEMMA_CUDA_ATTN_O=0;plain:GEMMA_CUDA_ATTN_O_PLAIN=1;newb:;offb:GEMMA_CUDA_ATTN_O=0" \
    timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/ab.txt 2>&1; el "ab rc $?"; ms $T/ab.txt
baseline old
traced new
cd $OUT && tar czf c4.tgz c4
