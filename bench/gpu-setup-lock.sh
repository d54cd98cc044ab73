# The GPU lock on the H200 test machine, sourced there from the project root in the call that measures, after every
# part of bench/gpu-bundle-lock.sh (.gpuL1 ... .gpuL<n>) was copied to /tmp/stash, one call each:
#   source bench/gpu-setup-lock.sh || exit 3
# It joins and checks the parts, installs every wheel with the slimmed vLLM into the venv /tmp/venv-lock (made with
# the image's packages visible behind it: NVIDIA's CUDA libraries come from there), compiles bytecode as setup.sh
# does, and puts that venv first on PATH. Sourced again on the same machine, it only sets PATH.
LOCK_VENV=${LOCK_VENV:-/tmp/venv-lock}
LOCK_PYTHON=${LOCK_PYTHON:-python3}  # the machine's Python 3.12
LOCK_STASH=${LOCK_STASH:-/tmp/stash}

lock_install() {
  local manifest=$LOCK_STASH/lock.manifest site
  [ -f "$manifest" ] || { echo "gpu-setup-lock: $manifest is missing: copy .gpuL1 ... to $LOCK_STASH first" >&2; return 3; }
  (cd "$LOCK_STASH" && sha256sum -c --quiet lock.manifest) || { echo "gpu-setup-lock: a part is missing or differs" >&2; return 3; }
  rm -rf /tmp/lock-parts && mkdir -p /tmp/lock-parts
  cat "$LOCK_STASH"/lock.[a-z][a-z] | tar x -C /tmp/lock-parts || return 3
  # the image's own pip installs into the venv's site-packages (its .pth files then load, as in a user's venv)
  "$LOCK_PYTHON" -m venv --without-pip --system-site-packages "$LOCK_VENV" || return 3
  site=$("$LOCK_VENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  "$LOCK_PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" \
    /tmp/lock-parts/wheels/*.whl || return 3
  xz -d < /tmp/lock-parts/vllm-slim.tar.xz | tar x -C "$site" || return 3
  "$LOCK_PYTHON" -m compileall -q -j 16 "$site" > /dev/null 2>&1
  rm -rf /tmp/lock-parts
  touch "$LOCK_VENV/installed"
  echo "gpu-setup-lock: installed $(ls "$site" | grep -c dist-info) distributions into $LOCK_VENV"
}

[ -f "$LOCK_VENV/installed" ] || lock_install || return 3 2> /dev/null || exit 3
export PATH=$LOCK_VENV/bin:$PATH
# torch 2.14 needs the lock's NCCL before the image's (which lacks ncclCommResume)
export LD_LIBRARY_PATH=$("$LOCK_VENV/bin/python" -c 'import nvidia.nccl, os; print(os.path.join(nvidia.nccl.__path__[0], "lib"))')${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
unset PYTHONPATH VLLM_USE_FLASHINFER_SAMPLER
python -c "import vllm, torch; print('gpu-setup-lock: vllm', vllm.__version__, 'torch', torch.__version__, 'on', torch.cuda.get_device_name(0))"
