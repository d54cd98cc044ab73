#!/usr/bin/env bash
# Installs the app into .venv from the pinned lock files; safe to run again (it only syncs).
#
#   bash scripts/setup.sh          # the app: the GPU build of vLLM if `nvidia-smi` sees a GPU, else the CPU build
#   bash scripts/setup.sh --dev    # the tests and benchmark too (CPU build, plus Debian's chromium for the UI test)
#
# CHAT_VARIANT=cpu|gpu overrides the choice. The CPU build needs torch 2.13.0+cpu: it comes from
# $PIP_FIND_LINKS when that folder is set, otherwise from PyTorch's CPU wheel index.
set -euo pipefail
cd "$(dirname "$0")/.."
dev=0
[ "${1:-}" = "--dev" ] && dev=1
variant=${CHAT_VARIANT:-}
if [ -z "$variant" ]; then
  if [ $dev = 0 ] && nvidia-smi > /dev/null 2>&1; then variant=gpu; else variant=cpu; fi
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
.venv/bin/python -m uv pip sync -q --python .venv/bin/python "${sources[@]}" "requirements/$variant.lock"
if [ $dev = 1 ] && ! { command -v chromium && command -v chromedriver; } > /dev/null; then
  echo "setup: installing Debian's chromium and chromium-driver for the browser test"
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq && $sudo apt-get install -y -qq chromium chromium-driver > /dev/null
fi
echo "setup: done"
