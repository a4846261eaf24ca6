#!/usr/bin/env bash
# The qwen2 encoder on a GPU machine (NVIDIA GPU, CMake, a C++ compiler and PyTorch 2.x; none of
# peakcast's Debian packages, no network), in one go, well under 8 minutes:
#   build  qwen2_bench against PyTorch's own LibTorch (CUDA) when `import torch` works, else
#          against the LibTorch CMake finds (Debian's 1.13 here: the CPU half);
#   (1)    the forward of the tiny fixtures against their reference.json;
#   (2)    where `transformers` is installed: peakcast's forward against transformers' own Qwen2
#          model, built from a random config and weights (bench/gpu/hf_reference.py);
#   (3)    batch-1 latency of the Qwen2.5-Coder-1.5B shape at 512, 1024, 2048 and 4096 tokens
#          (bfloat16), beside the compute floor 2*params*tokens at the measured bf16 matmul rate
#          and the study's 31.31 ms;
#   (4)    LoRA training throughput (tokens/s).
# On a machine without CUDA the same runs on the CPU in float32 with shorter lengths
# (CPU_TOKENS, default 512; LORA_TOKENS, default 64).
#
# What the GPU machine lacks travels in bench/gpu/vendor/ (git-ignored): fmt and nlohmann-json
# headers and the two tiny fixture folders. Make it here first, then carry it:
#   bench/gpu/run.sh --vendor-only        # on a peakcast machine with ../shared/data
#   (device tool) run: bench/gpu/run.sh   carry: ["bench/gpu/vendor"]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
VENDOR="$ROOT/bench/gpu/vendor"
DATA="${PEAKCAST_QWEN2_DATA:-$ROOT/../shared/data/qwen2}"

if [ ! -d "$VENDOR/fmt" ] || [ ! -d "$VENDOR/nlohmann" ]; then
  if [ -d /usr/include/fmt ] && [ -d /usr/include/nlohmann ]; then
    mkdir -p "$VENDOR"
    cp -r /usr/include/fmt /usr/include/nlohmann "$VENDOR/"
  else
    echo "bench/gpu/run.sh: no fmt/nlohmann headers: run 'bench/gpu/run.sh --vendor-only' on a" \
         "machine with peakcast's packages and carry bench/gpu/vendor" >&2
    exit 2
  fi
fi
for d in tiny-f32 tiny-bf16; do
  if [ ! -d "$VENDOR/qwen2/$d" ] && [ -f "$DATA/$d/reference.json" ]; then
    mkdir -p "$VENDOR/qwen2"
    cp -r "$DATA/$d" "$VENDOR/qwen2/"
  fi
done
if [ "${1:-}" = "--vendor-only" ]; then
  echo "bench/gpu/vendor ready: $(du -sh "$VENDOR" | cut -f1)"
  exit 0
fi

t0=$(date +%s)
PREFIX="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null || true)"
CUDA="$(python3 -c 'import torch; print(int(torch.cuda.is_available()))' 2>/dev/null || echo 0)"
BUILD="${BUILD_DIR:-$ROOT/build-gpu}"
echo "== build: LibTorch from ${PREFIX:-the default CMake search} (cuda available: $CUDA)"
mkdir -p "$BUILD"
cmake -S bench/gpu -B "$BUILD" -DCMAKE_BUILD_TYPE=Release ${PREFIX:+-DCMAKE_PREFIX_PATH="$PREFIX"} \
      -DVENDOR_DIR="$VENDOR" >"$BUILD/configure.log" 2>&1 || { cat "$BUILD/configure.log"; exit 1; }
cmake --build "$BUILD" -j "$(nproc)" 2>&1 | tail -3
echo "   built in $(( $(date +%s) - t0 )) s"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true

refs=()
for d in tiny-f32 tiny-bf16; do
  [ -f "$VENDOR/qwen2/$d/reference.json" ] && refs+=(--reference "$VENDOR/qwen2/$d")
done
[ ${#refs[@]} -eq 0 ] && echo "(1) fixtures absent (no ../shared/data/qwen2 and nothing in bench/gpu/vendor/qwen2): skipped"
if python3 -c 'import transformers' 2>/dev/null; then
  echo "== (2) transformers' Qwen2 on a random config and weights"
  python3 bench/gpu/hf_reference.py --out "$BUILD/hf-random" && refs+=(--reference "$BUILD/hf-random")
else
  echo "(2) the transformers package is not installed here: skipped"
fi

if [ "$CUDA" = 1 ]; then
  "$BUILD/qwen2_bench" --device cuda --dtype bfloat16 --tokens 512,1024,2048,4096 \
      --lora-tokens "${LORA_TOKENS:-1024}" --lora-steps 10 "${refs[@]}"
else
  "$BUILD/qwen2_bench" --device cpu --dtype float32 --tokens "${CPU_TOKENS:-512}" \
      --lora-tokens "${LORA_TOKENS:-64}" --lora-steps 1 "${refs[@]}"
fi
echo "== done in $(( $(date +%s) - t0 )) s"
