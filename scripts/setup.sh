#!/usr/bin/env bash
# Installs the app into .venv from the pinned lock files; safe to run again (it only syncs).
#
#   bash scripts/setup.sh          # the app: the GPU build of vLLM if `nvidia-smi` sees a GPU it can drive,
#                                  # else the CPU build
#   bash scripts/setup.sh --dev    # the tests and benchmark too (CPU build, plus Debian's chromium for the UI test),
#                                  # and the GPU lock in .venv-gpu, where the tests that need no GPU device run too
#
# CHAT_VARIANT=cpu|gpu overrides the choice. The CPU build needs torch 2.13.0+cpu: it comes from
# $PIP_FIND_LINKS when that folder is set, otherwise from PyTorch's CPU wheel index.
set -euo pipefail
cd "$(dirname "$0")/.."
dev=0
[ "${1:-}" = "--dev" ] && dev=1
# vLLM's GPU build (CUDA 13) needs NVIDIA driver 580+ and compute capability 7.5+ (the app checks again at start).
gpu_ok() {
  local info driver cap
  info=$(nvidia-smi --query-gpu=driver_version,compute_cap --format=csv,noheader 2>/dev/null | head -1) || return 1
  [ -n "$info" ] || return 1
  driver=${info%%,*}; cap=${info##*, }
  if [ "${driver%%.*}" -lt 580 ] 2>/dev/null; then
    echo "setup: the NVIDIA driver is $driver; the GPU build needs 580 or newer. Update the driver and run this" \
         "again; installing the CPU build meanwhile." >&2
    return 1
  fi
  if [ "${cap%%.*}${cap##*.}" -lt 75 ] 2>/dev/null; then
    echo "setup: this GPU has compute capability $cap; vLLM's CUDA 13 build needs 7.5 or newer. Installing the" \
         "CPU build." >&2
    return 1
  fi
}
variant=${CHAT_VARIANT:-}
if [ -z "$variant" ]; then
  if [ $dev = 0 ] && gpu_ok; then variant=gpu; else variant=cpu; fi
fi
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check uv==0.13.9
sources=()
if [ "$variant" = cpu ]; then
  if [ -n "${PIP_FIND_LINKS:-}" ]; then
    sources=(--find-links "$PIP_FIND_LINKS")
  else
    sources=(--extra-index-url https://download.pytorch.org/whl/cpu --index-strategy unsafe-best-match)
  fi
fi
echo "setup: installing the $variant build into .venv"
# The locks are compiled with uv's overrides (requirements/overrides.txt: Chainlit's mcp<2, vLLM's missing
# flashinfer-python 0.7.3; each lock's header has the command), so a sync installs them as they are.
# Bytecode now (about 35 s on 2 cores) rather than at the app's first start: torch and vLLM compiled from
# source took `import vllm` from 3 s to 12 s here, and where PYTHONDONTWRITEBYTECODE is set, at every start.
.venv/bin/python -m uv pip sync -q --compile-bytecode --python .venv/bin/python "${sources[@]}" \
  "requirements/$variant.lock"
# The GPU lock beside it, for the tests: what every GPU user installs, run by `pytest` on this machine too for all
# that needs no GPU device (tests/test_gpu_build.py). pytest and its plugins at the CPU lock's versions; no bytecode
# now (a test run compiles only what it imports) and no machine cache (there is no GPU to fill it for).
if [ $dev = 1 ]; then
  echo "setup: installing the GPU lock into .venv-gpu (for the tests)"
  [ -x .venv-gpu/bin/python ] || python3 -m venv .venv-gpu
  .venv/bin/python -m uv pip sync -q --python .venv-gpu/bin/python requirements/gpu.lock
  grep -E '^(pytest|pytest-asyncio|pytest-timeout|pluggy|iniconfig)==' requirements/cpu.lock > .venv-gpu/test-tools.txt
  .venv/bin/python -m uv pip install -q --no-deps --python .venv-gpu/bin/python -r .venv-gpu/test-tools.txt
fi
# What an engine's first start on this machine would compute and cache (engine/machine_cache.py): vLLM's
# inspection of ERNIE's class, and on a GPU FlashInfer's sampling kernels (nvcc). A failure costs only time.
.venv/bin/python -m engine.machine_cache || echo "setup: the first start of the app fills vLLM's caches instead" >&2
# vLLM's CPU guide preloads tcmalloc (Debian's libtcmalloc-minimal4; PyPI has none) and Intel OpenMP (the CPU
# lock's intel-openmp) for the engine: .venv/bin/chainlit becomes a launcher that does, before chainlit starts
# (engine/cpu_runtime.py decides; a GPU build gets neither). Without root or apt the app runs as before, slower.
root=""; [ "$(id -u)" = 0 ] || root="sudo -n"
if [ "$variant" = cpu ] && ! ldconfig -p 2> /dev/null | grep -q libtcmalloc_minimal.so.4; then
  if command -v apt-get > /dev/null && { $root apt-get install -y -qq libtcmalloc-minimal4 ||
       { $root apt-get update -qq && $root apt-get install -y -qq libtcmalloc-minimal4; }; } > /dev/null 2>&1; then
    echo "setup: installed Debian's libtcmalloc-minimal4 for the CPU engine"
  else
    echo "setup: could not install libtcmalloc-minimal4 (sudo apt-get install libtcmalloc-minimal4 makes the" \
         "CPU engine faster); going on without it" >&2
  fi
fi
cat > .venv/bin/chainlit << LAUNCHER
#!$PWD/.venv/bin/python
# Written by scripts/setup.sh in place of pip's chainlit script: the same, started once more with the CPU
# engine's libraries preloaded first ($PWD/engine/cpu_runtime.py).
import importlib.util
import sys

try:
    spec = importlib.util.spec_from_file_location("_cpu_runtime", "$PWD/engine/cpu_runtime.py")
    runtime = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runtime)
    runtime.launch(sys.argv)
except Exception:  # a moved or missing module: chainlit as pip installs it
    pass
from chainlit.cli import cli

if __name__ == "__main__":
    sys.exit(cli())
LAUNCHER
chmod +x .venv/bin/chainlit
# The browser test, with fonts for Chinese and emoji so its pictures show what users see; PostgreSQL for the
# shared-history test and nginx for the reverse-proxy test (each test starts its own server in a temporary folder).
browser=(chromium chromium-driver fonts-noto-cjk fonts-noto-color-emoji postgresql nginx)
if [ $dev = 1 ] && ! dpkg -s "${browser[@]}" > /dev/null 2>&1; then
  echo "setup: installing Debian's ${browser[*]} for the browser and PostgreSQL tests"
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq && $sudo apt-get install -y -qq "${browser[@]}" > /dev/null
fi
echo "setup: done"
