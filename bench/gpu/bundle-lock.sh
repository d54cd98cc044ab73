#!/usr/bin/env bash
# The GPU lock (requirements/gpu.lock), every package at its pinned version, for the H200 test machine: its image has
# Python 3.12, torch 2.11 with CUDA 13.0 and reaches no registry, so the lock travels there as wheels in parts that
# one call can carry, and bench/gpu/setup-lock.sh installs them into a venv that sees the image's packages only
# where the lock's are not there (what a GPU user's `bash scripts/setup.sh` installs, less what is listed below).
#
#   bash bench/gpu/bundle-lock.sh            # from the project root, PyPI needed; minutes (downloads, xz of vLLM)
#
# What it carries: every package of requirements/gpu.lock as a CPython 3.12 x86-64 wheel at the lock's version (two
# sdist-only packages built into wheels here), and pytest with its plugins at requirements/cpu.lock's versions (the
# tests on the GPU). Two changes, both of size, none of version:
# - NVIDIA's CUDA libraries come from the image where its own torch loads them (CUDA_FROM_IMAGE below: cuBLAS, the
#   runtime, cuDNN, cuFFT, ...; `python -m harness.locks compare gpu` there lists the image's versions beside the
#   lock's). NCCL is carried: torch 2.14 does not import with the image's 2.28 ("undefined symbol: ncclCommResume").
# - vLLM's wheel is slimmed as ../shared/gpu/make-bundle.sh slims 0.26: kernels a dense bf16 model on Hopper never
#   loads (the Rust front end, FlashAttention 2, MoE, FlashMLA, DeepGEMM, the SM100-only fmha) are dropped; its
#   Python files and metadata are as released.
# - Three packages that never load on this machine's path are left out (LEFT_OUT): the CuTe DSL's CUDA 12 libraries
#   (the lock's torch is CUDA 13), OpenCV and NVIDIA's video codec (vLLM's image and video inputs).
#
# Result, in the project root: .gpuL1/ ... .gpuL<n>/, one part of at most 55 MiB each (a call carries the working
# tree and one part within its 64 MiB), .gpuL1 also the manifest; all in .git/info/exclude, never committed.
# On the machine: `mkdir -p /tmp/stash && cp .gpuL<k>/* /tmp/stash/`, one call per folder; then, in the call that
# measures: `source bench/gpu/setup-lock.sh || exit 3`.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
cache=${GPU_LOCK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ernie-chat/gpu-lock-wheels}  # downloads kept between runs
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
CUDA_FROM_IMAGE='nvidia-(cublas|cuda-cccl|cuda-crt|cuda-cupti|cuda-nvcc|cuda-nvrtc|cuda-runtime|cudnn-cu13|cufft|cufile'
CUDA_FROM_IMAGE+='|curand|cusolver|cusparse|cusparselt-cu13|nvjitlink|nvshmem-cu13|nvtx|nvvm)|cuda-toolkit'
LEFT_OUT='nvidia-cutlass-dsl-libs-cu12|opencv-python-headless|pynvvideocodec'
python=.venv/bin/python
[ -x $python ] || python=python3
platforms=()
for n in 17 18 24 25 26 27 28 31 34 35; do platforms+=(--platform "manylinux_2_${n}_x86_64"); done
mkdir -p "$cache" "$work/wheels"
{
  $python -c "from harness import locks; [print(f'{n}=={v}') for n, v in sorted(locks.pins('gpu').items())]" \
    | grep -vE "^($CUDA_FROM_IMAGE|$LEFT_OUT)=="
  grep -E '^(pytest|pytest-asyncio|pytest-timeout|pluggy|iniconfig)==' requirements/cpu.lock
} > "$work/wanted.txt"
while read -r wanted; do
  name=${wanted%%==*}; version=${wanted#*==}
  stem=$(echo "$name" | tr 'A-Z.-' 'a-z__')
  if ! ls "$cache" | grep -qiE "^${stem}-${version//./\\.}-"; then
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --abi cp312 --abi abi3 --abi none "${platforms[@]}" --platform manylinux2014_x86_64 --platform any \
      -d "$cache" "$wanted" > "$work/pip.log" 2>&1 \
      || python3 -m pip wheel -q --no-deps -w "$cache" "$wanted" > "$work/pip.log" 2>&1 \
      || { cat "$work/pip.log" >&2; echo "bundle-lock: no wheel for $wanted" >&2; exit 1; }
  fi
  file=$(ls "$cache" | grep -iE "^${stem}-${version//./\\.}-" | head -1)
  [ "$name" = vllm ] || cp "$cache/$file" "$work/wheels/"
done < "$work/wanted.txt"

# vLLM, slimmed, as a tar of what its wheel installs
mkdir "$work/x" && (cd "$work/x" && python3 -m zipfile -e "$cache"/vllm-0.34.0-*.whl .)
(cd "$work/x" && rm -f vllm/vllm-rs vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so vllm/_moe_C_stable_libtorch.abi3.so \
  vllm/_flashmla_C.abi3.so vllm/_flashmla_extension_C.abi3.so && rm -rf vllm/third_party/deep_gemm \
  vllm/third_party/fmha_sm100 && tar cf - vllm vllm-0.34.0.dist-info | xz -T2 -6 > "$work/vllm-slim.tar.xz")

rm -rf .gpuL[0-9]* && mkdir -p "$work/parts"
(cd "$work" && tar cf - wheels vllm-slim.tar.xz wanted.txt) | split -b 55M - "$work/parts/lock."
(cd "$work/parts" && sha256sum lock.* > lock.manifest)
k=0
for part in "$work"/parts/lock.[a-z][a-z]; do
  k=$((k + 1))
  mkdir ".gpuL$k" && mv "$part" ".gpuL$k/"
done
mv "$work/parts/lock.manifest" .gpuL1/
for pattern in '/.gpuL*/'; do
  grep -qxF "$pattern" .git/info/exclude 2> /dev/null || echo "$pattern" >> .git/info/exclude
done
echo "bundle-lock: $(wc -l < "$work/wanted.txt") packages, $(du -sh "$work/wheels" | cut -f1) of wheels" \
  "and $(du -h "$work/vllm-slim.tar.xz" | cut -f1) of vLLM, in $k parts (.gpuL1 ... .gpuL$k), one call each"
