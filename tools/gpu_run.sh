#!/usr/bin/env bash
# gpu_run.sh: the device-side driver of tools/train_small_model.py, for the run tool.
#
#   bash tools/gpu_run.sh "$OUT" [run options...]      (carry .carry, made by the prepare step)
#
# First every stage tiny (--smoke, about a minute) so that a broken script costs little, then
# the real run with the given options under a time limit (GPU_RUN_LIMIT_S, default 540 s), all
# output in $OUT/log.txt. The work folder is packed into at most 15 MB parts
# ($OUT/r.tgz.part-aa, -ab, ...) because the run tool returns files of at most 16 MiB;
# tools/install_small_model.sh unpacks them into models/ and docs/small_model/.
set -u
out=${1:?usage: gpu_run.sh OUT_DIR [run options...]}
shift
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=true
limit=${GPU_RUN_LIMIT_S:-540}
(
    timeout 120 python3 tools/train_small_model.py run --smoke --data .carry/data --work /tmp/smoke &&
        timeout "$limit" python3 tools/train_small_model.py run --data .carry/data --work "$out/work" "$@"
) >"$out/log.txt" 2>&1
echo "rc=$?" >>"$out/log.txt"
cd "$out" || exit 1
if [ -d work ]; then
    tar czf r.tgz work && rm -rf work && split -b 15m r.tgz r.tgz.part- && rm r.tgz
fi
ls -la
tail -c 11000 log.txt
