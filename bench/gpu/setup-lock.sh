# The GPU lock on the GPU test machine, sourced there from the project root in the call that measures, after every
# part of bench/gpu/bundle-lock.sh (.gpuL1 ... .gpuL<n>) was copied to /tmp/stash, one call each:
#   source bench/gpu/setup-lock.sh || exit 3
# It joins and checks the parts, installs every wheel with the slimmed vLLM into the venv /tmp/venv-lock, compiles
# bytecode as setup.sh does, and puts that venv first on PATH. Sourced again on the same machine, it only sets PATH.
#
# The venv sees nothing of the image's packages but NVIDIA's CUDA libraries that the bundle leaves to the image
# (cuBLAS, cuDNN, cuSPARSELt, NVSHMEM, ...): each folder of the image's `nvidia/` that the venv lacks is linked into
# the venv's `nvidia/`. The image's `python3` is itself a venv (/opt/torch/.venv), so `--system-site-packages` from
# it would show the base interpreter's packages and none of the image's; showing the whole image site instead would
# bring its torch-2.11 builds (its torchvision 0.26 breaks torch 2.14 at import: "operator torchvision::nms does
# not exist"). So: the lock's packages, and of the image only the CUDA libraries.
LOCK_VENV=${LOCK_VENV:-/tmp/venv-lock}
LOCK_PYTHON=${LOCK_PYTHON:-python3}  # the machine's Python 3.12
LOCK_STASH=${LOCK_STASH:-/tmp/stash}

lock_link_cuda() {  # lock_link_cuda SITE: the image's NVIDIA library folders that SITE/nvidia lacks, linked in
  local image linked=()
  image=$("$LOCK_PYTHON" -c "import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0]))") || {
    echo "setup-lock: the image's Python has no nvidia/ libraries to link" >&2; return 3; }
  mkdir -p "$1/nvidia"
  for folder in "$image"/nvidia/*/; do
    folder=${folder%/}
    [ -e "$1/nvidia/${folder##*/}" ] || { ln -s "$folder" "$1/nvidia/${folder##*/}"; linked+=("${folder##*/}"); }
  done
  echo "setup-lock: linked the image's NVIDIA libraries: ${linked[*]:-none}"
}

lock_install() {
  local manifest=$LOCK_STASH/lock.manifest site
  [ -f "$manifest" ] || { echo "setup-lock: $manifest is missing: copy .gpuL1 ... to $LOCK_STASH first" >&2; return 3; }
  (cd "$LOCK_STASH" && sha256sum -c --quiet lock.manifest) || { echo "setup-lock: a part is missing or differs" >&2; return 3; }
  rm -rf /tmp/lock-parts && mkdir -p /tmp/lock-parts
  cat "$LOCK_STASH"/lock.[a-z][a-z] | tar x -C /tmp/lock-parts || return 3
  # the image's own pip installs into the venv's site-packages (its .pth files then load, as in a user's venv)
  "$LOCK_PYTHON" -m venv --without-pip "$LOCK_VENV" || return 3
  site=$("$LOCK_VENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  "$LOCK_PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" \
    /tmp/lock-parts/wheels/*.whl || return 3
  xz -d < /tmp/lock-parts/vllm-slim.tar.xz | tar x -C "$site" || return 3
  lock_link_cuda "$site" || return 3
  "$LOCK_PYTHON" -m compileall -q -j 16 "$site" > /dev/null 2>&1
  rm -rf /tmp/lock-parts
  touch "$LOCK_VENV/installed"
  echo "setup-lock: installed $(ls "$site" | grep -c dist-info) distributions into $LOCK_VENV"
}

[ -f "$LOCK_VENV/installed" ] || lock_install || return 3 2> /dev/null || exit 3
export PATH=$LOCK_VENV/bin:$PATH
# torch 2.14 needs the lock's NCCL before the image's (which lacks ncclCommResume)
export LD_LIBRARY_PATH=$("$LOCK_VENV/bin/python" -c 'import nvidia.nccl, os; print(os.path.join(nvidia.nccl.__path__[0], "lib"))')${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
unset PYTHONPATH VLLM_USE_FLASHINFER_SAMPLER
python -c "import vllm, torch; print('setup-lock: vllm', vllm.__version__, 'torch', torch.__version__, 'on', torch.cuda.get_device_name(0))"
