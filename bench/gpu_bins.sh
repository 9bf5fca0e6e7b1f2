# gpu_bins.sh: sourced by the GPU benchmarks (from the repository root, ROOT set): ENGINE and
# PROFILE are the engine and bench/decode_profile of GPU_BIN_DIR when it is set (binaries built
# elsewhere), else of build-gpu, built here with the CUDA backend.
if [[ -n "${GPU_BIN_DIR:-}" ]]; then
  BIN=$(cd "$GPU_BIN_DIR" && pwd)
  PROFILE=$BIN/decode_profile ENGINE=$BIN/engine
else
  ./scripts/build.sh build-gpu -DWITH_CUDA=ON
  PROFILE=$ROOT/build-gpu/bench/decode_profile ENGINE=$ROOT/build-gpu/engine/engine
fi
