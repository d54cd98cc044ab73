#!/usr/bin/env bash
# Builds what the H200 test machine needs to run vLLM 0.34.0 beside the vLLM 0.26 bundle of
# ../shared/gpu/make-bundle.sh. Why: the machine's image has torch 2.11.0+cu130 (CUDA 13.0.2, cuDNN 9.19,
# NCCL 2.28.9, triton 3.6, torchvision 0.26, transformers 5.17) and reaches no registry; vLLM 0.34.0 pins
# torch 2.14.0, which needs triton 3.8.0 and NCCL >= 2.30 (on the image's NCCL its import fails: "undefined
# symbol: ncclCommResume"), and the image's torchvision 0.26 breaks torch 2.14's import in transformers
# ("operator torchvision::nms does not exist"). All of it travels as files, in parts a call can carry.
#
#   bash bench/gpu/bundle-034.sh              # from the project root, PyPI needed; minutes (xz of vLLM)
#   bash bench/gpu/bundle-034.sh --flashinfer # also the optional parts: FlashInfer and NVIDIA's CuTe DSL
#
# What it downloads, for CPython 3.12 on manylinux x86_64 (what the image lacks, nothing it has):
# - torch 2.14.0, triton 3.8.0, nvidia-nccl-cu13 2.30.7 (what torch 2.14 links), torchvision 0.29.0;
# - vllm 0.34.0, slimmed as make-bundle.sh slims 0.26: the Rust front end (vllm-rs), FlashAttention 2 (the
#   H200 runs FlashAttention 3), the MoE, FlashMLA and DeepGEMM kernels and the SM100-only fmha_sm100 are
#   dropped: a dense bf16 model on Hopper never runs them, and vLLM imports each of them only where it is
#   present. One line is changed: the warm-up's import of the MiniMax-M3 MSA kernels (whose modules import
#   NVIDIA's CuTe DSL, `cutlass`, 95 MB) is skipped where `cutlass` is not installed; that warm-up returns
#   at once for any model without MiniMax-M3's sparse attention, so nothing else changes;
# - vLLM 0.34's Python dependencies that neither the image nor the 0.26 bundle's dependency wheels
#   (.gpuB/deps, installed beside these on the machine) have, or that 0.34 needs newer: DEPS below;
# - with --flashinfer: flashinfer-python 0.7.4 (0.34 pins 0.7.3, which PyPI no longer serves), its
#   dependencies, and nvidia-cutlass-dsl 4.8.1 with its libraries for CUDA 13. Not needed to serve: the app
#   samples with vLLM's own sampler until FlashInfer's kernels are built on the machine (engine/machine_cache).
#   cuDNN 9.24 (what torch 2.14 was built with; 527 MiB) is left out: the image's 9.19 loads, and torch only
#   refuses it once cuDNN is used, which a decoder-only model's path does not do.
#
# Result, in the project root (each folder one part of at most 55 MiB, so a call carries the working tree
# and one part within its 64 MiB; all listed in .git/info/exclude, never committed):
#   .gpuV1/ ... .gpuV<n>/   v034.core.a?  (and v034.extra.a? with --flashinfer), .gpuV1 also v034.manifest
# On the machine: `mkdir -p /tmp/stash && cp .gpuV<k>/* /tmp/stash/` in one call per folder, then, in the call
# that carries .gpuB (after `source .gpuB/device-setup.sh`): `source bench/gpu/setup-034.sh`.
# Dec 4: 20 parts (1.1 GB: torch 529 MiB, triton 236, NCCL 206, vLLM slimmed and xz'd), 5 more with --flashinfer;
# about 5 s a call on a warm machine; the install there took about 1.5 minutes (bench/results/currentvllm-gpu-20261204).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
extra=false
[ "${1:-}" = --flashinfer ] && extra=true
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
platforms=()
for n in 17 18 24 25 26 27 28 31 34 35; do platforms+=(--platform "manylinux_2_${n}_x86_64"); done
dl() {  # dl FOLDER REQUIREMENT...: wheels for CPython 3.12 on x86_64 Linux, no dependencies
  mkdir -p "$1"
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${platforms[@]}" --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$1" "${@:2}" 2>&1 \
    | { grep -v '^WARNING: Location' || true; }
}

# The torch 2.14 stack.
dl "$work/core/wheels" torch==2.14.0 triton==3.8.0 nvidia-nccl-cu13==2.30.7 torchvision==0.29.0

# vLLM 0.34.0, slimmed.
dl "$work" vllm==0.34.0
mkdir "$work/x" && (cd "$work/x" && python3 -m zipfile -e "$work"/vllm-0.34.0-*.whl .)
cd "$work/x"
rm -f vllm/vllm-rs vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so vllm/_moe_C_stable_libtorch.abi3.so \
      vllm/_flashmla_C.abi3.so vllm/_flashmla_extension_C.abi3.so
rm -rf vllm/third_party/deep_gemm vllm/third_party/fmha_sm100
python3 - vllm/model_executor/warmup/kernel_warmup.py << 'PATCH'
import sys
from pathlib import Path

path = Path(sys.argv[1])
text = path.read_text()
old = """    if current_platform.is_cuda():
        # The MSA kernels, and the CuTe DSL their modules import, are CUDA-only."""
new = """    if current_platform.is_cuda() and __import__("importlib.util").util.find_spec("cutlass"):
        # The MSA kernels, and the CuTe DSL their modules import, are CUDA-only."""
if text.count(old) != 1:
    sys.exit("bundle-034: the MiniMax-M3 warm-up import is not where it was in vLLM 0.34.0")
path.write_text(text.replace(old, new))
PATCH
tar cf - vllm vllm-0.34.0.dist-info | xz -T2 -6 > "$work/core/vllm-0.34.0-slim.tar.xz"
cd "$root"

# vLLM 0.34's Python dependencies that the image, Chainlit's bundle (.gpuC) and .gpuB/deps lack, found by importing
# what the app and its benchmarks import (the engine core, the V2 model runner and its sampler, FlashAttention's
# backend, ERNIE's model, the warm-up, the metrics, the OpenAI server) with the image's versions: orjson (vLLM's
# serving utilities import it at the top). The rest of 0.34's requirements are imported only by features this
# app does not use (other models' kernels, quantization, audio and video, tool servers, tracing) or are there
# in other versions that import and serve (transformers 5.17, tokenizers 0.23.2, huggingface_hub 1.33, xgrammar
# 0.2.9, mcp 1.x).
DEPS=(orjson==3.13.0)
dl "$work/core/wheels" "${DEPS[@]}"

if $extra; then
  dl "$work/extra/wheels" flashinfer-python==0.7.4 nvidia-cutlass-dsl==4.8.1 nvidia-cutlass-dsl-libs-base==4.8.1 \
    nvidia-cutlass-dsl-libs-cu13==4.8.1 cuda-tile==1.7.0 'nvidia-cudnn-frontend>=1.32' 'cuda-python>=13,<14' \
    nccl4py nccl-extensions
fi

# One tar stream per set, split into 55 MiB parts; one part per .gpuV folder.
rm -rf .gpuV[0-9]* && mkdir -p "$work/parts"
(cd "$work/core" && tar cf - .) | split -b 55M - "$work/parts/v034.core."
if $extra; then (cd "$work/extra" && tar cf - .) | split -b 55M - "$work/parts/v034.extra."; fi
(cd "$work/parts" && sha256sum v034.* > v034.manifest)
k=0
for part in "$work"/parts/v034.core.* "$work"/parts/v034.extra.*; do
  [ -f "$part" ] || continue
  k=$((k + 1))
  mkdir ".gpuV$k" && mv "$part" ".gpuV$k/"
done
mv "$work/parts/v034.manifest" .gpuV1/
grep -qxF '/.gpuV*/' .git/info/exclude 2> /dev/null || echo '/.gpuV*/' >> .git/info/exclude
ls "$work/core/wheels" "$work/extra/wheels" 2> /dev/null || true
du -sh "$work/core" "$work/extra" 2> /dev/null || true
echo "bundle-034: $k parts (.gpuV1 ... .gpuV$k), one call each"
