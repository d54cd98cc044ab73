# vLLM 0.34.0 on the H200 test machine, beside the 0.26 bundle: sourced there, in the call that carries .gpuB,
# after `source .gpuB/device-setup.sh` (which put vLLM 0.26 into /tmp/site):
#   source .gpuB/device-setup.sh || exit 3; source bench/gpu/setup-034.sh || exit 4
# Before it, every part of bench/gpu/bundle-034.sh (.gpuV1 ... .gpuV<n>) was copied to /tmp/stash, one call each,
# and the app's own wheels (bench/gpu/wheels.sh, .gpuP) to /tmp/stash/wheels.
#
# It joins the parts, installs torch 2.14.0, triton 3.8.0, NCCL 2.30.7, torchvision 0.29.0, the slimmed vLLM 0.34.0
# and the Python packages it needs into /tmp/site034 (the 0.26 bundle's dependency wheels from .gpuB/deps and the
# app's wheels, less FlashInfer 0.6.14, which is built for 0.26, and less what the 0.34 bundle brings newer), then
# checks `import torch, vllm` and a 10-token AsyncLLM generation. Once /tmp/site034 exists, sourcing it again only
# sets the environment. It defines two functions that switch this shell between the versions:
#   use_vllm_034   PYTHONPATH=/tmp/site034:/tmp/site-ui, NCCL 2.30.7 first on LD_LIBRARY_PATH (torch 2.14 needs it)
#   use_vllm_026   PYTHONPATH=/tmp/site:/tmp/site-ui, the image's NCCL (as device-setup.sh left it), and
#                  VLLM_USE_V2_MODEL_RUNNER=0: 0.26 with its V1 model runner, as the app ran it before 0.34
# and leaves 0.34 selected. VLLM_USE_FLASHINFER_SAMPLER=0 stays set for both (no FlashInfer kernels are built here).

V034_SITE=/tmp/site034
V034_STASH=/tmp/stash
# the library path 0.26 runs with (the image's NCCL), kept for use_vllm_026 in this shell and its children
export V026_LD_LIBRARY_PATH=${V026_LD_LIBRARY_PATH-${LD_LIBRARY_PATH:-}}

v034_name() {  # the distribution name of a wheel file, normalised
  local base=${1##*/}
  base=${base%%-*}
  echo "$base" | tr 'A-Z.' 'a-z_' | tr -s '_-' '__'
}

v034_install() {
  local manifest=$V034_STASH/v034.manifest part missing=0
  if [ ! -f "$manifest" ]; then
    echo "setup-034: $manifest is missing: copy .gpuV1 ... .gpuV<n> to $V034_STASH on this machine first" >&2
    return 3
  fi
  for part in $(awk '{print $2}' "$manifest" | grep '^v034\.core\.'); do
    [ -f "$V034_STASH/$part" ] || { echo "setup-034: $part is missing from $V034_STASH" >&2; missing=1; }
  done
  [ $missing = 0 ] || return 3
  (cd "$V034_STASH" && grep ' v034\.core\.' v034.manifest | sha256sum -c --quiet) || {
    echo "setup-034: a part differs from the manifest" >&2; return 3; }
  local extras=true
  for part in $(awk '{print $2}' "$manifest" | grep '^v034\.extra\.'); do
    [ -f "$V034_STASH/$part" ] || extras=false
  done
  grep -q ' v034\.extra\.' "$manifest" || extras=false
  rm -rf /tmp/v034 && mkdir -p /tmp/v034/core /tmp/v034/extra
  cat "$V034_STASH"/v034.core.* | tar x -C /tmp/v034/core || return 3
  if $extras; then
    cat "$V034_STASH"/v034.extra.* | tar x -C /tmp/v034/extra || return 3
  fi
  # One wheel per distribution: the 0.34 bundle's first, then the app's (less FlashInfer 0.6.14 and what only it
  # needs), then the 0.26 bundle's dependency wheels.
  local wheels=() seen=" " w name
  for w in /tmp/v034/extra/wheels/*.whl /tmp/v034/core/wheels/*.whl "$V034_STASH"/wheels/*.whl .gpuB/deps/*.whl; do
    [ -f "$w" ] || continue
    name=$(v034_name "$w")
    case "$w" in "$V034_STASH"/wheels/*)
      case "$name" in flashinfer_python|cuda_tile|nvidia_cudnn_frontend) continue ;; esac ;;
    esac
    case "$seen" in *" $name "*) continue ;; esac
    seen="$seen$name "
    wheels+=("$w")
  done
  mkdir -p "$V034_SITE"
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$V034_SITE" "${wheels[@]}" \
    || return 3
  xz -d < /tmp/v034/core/vllm-0.34.0-slim.tar.xz | tar x -C "$V034_SITE" || return 3
  rm -rf /tmp/v034
  # Bytecode now, as a user's install has it (scripts/setup.sh: `uv pip sync --compile-bytecode`): without it every
  # start compiled torch's and vLLM's sources again, half of a start's samples (bench/results/currentvllm-gpu-20261204-run2)
  python3 -m compileall -q -j 16 "$V034_SITE" /tmp/site-ui > /dev/null 2>&1
  echo "setup-034: installed ${#wheels[@]} wheels and vLLM 0.34.0 into $V034_SITE (FlashInfer: $extras)"
}

use_vllm_034() {
  export PYTHONPATH=$V034_SITE:/tmp/site-ui
  # NVIDIA's CuTe DSL (optional parts) puts its packages on sys.path with a .pth file, which PYTHONPATH skips
  [ -d $V034_SITE/nvidia_cutlass_dsl/dsl_packages ] && PYTHONPATH=$V034_SITE:$V034_SITE/nvidia_cutlass_dsl/dsl_packages:/tmp/site-ui
  export LD_LIBRARY_PATH=$V034_SITE/nvidia/nccl/lib${V026_LD_LIBRARY_PATH:+:$V026_LD_LIBRARY_PATH}
  # vLLM 0.34 refuses VLLM_USE_V2_MODEL_RUNNER=0 ("Model Runner V1 has been removed"); an app that would still
  # set it (engine/build.py's GPU_ENGINE_ENV, with setdefault) gets 1 here, which 0.34 only warns about.
  if grep -q '"VLLM_USE_V2_MODEL_RUNNER": "0"' engine/build.py 2> /dev/null; then
    export VLLM_USE_V2_MODEL_RUNNER=1
    echo "setup-034: engine/build.py still sets VLLM_USE_V2_MODEL_RUNNER=0: set to 1 for vLLM 0.34" >&2
  else
    unset VLLM_USE_V2_MODEL_RUNNER
  fi
}

use_vllm_026() {
  export PYTHONPATH=/tmp/site:/tmp/site-ui
  export LD_LIBRARY_PATH=$V026_LD_LIBRARY_PATH
  [ -n "$LD_LIBRARY_PATH" ] || unset LD_LIBRARY_PATH
  # 0.26 as the app ran it until the move to 0.34: with vLLM's V1 model runner (engine/build.py set this then)
  export VLLM_USE_V2_MODEL_RUNNER=0
}

v034_check() {  # import torch and vLLM, then 10 tokens from an AsyncLLM on the model in $1 (eager, small)
  cat > /tmp/v034_check.py << 'CHECK'
import asyncio
import sys
import time


async def main(model):
    began = time.perf_counter()
    import torch
    import vllm
    from vllm import AsyncEngineArgs, SamplingParams
    from vllm.v1.engine.async_llm import AsyncLLM

    print(f"setup-034: vllm {vllm.__version__} torch {torch.__version__} (CUDA {torch.version.cuda}, NCCL "
          f"{'.'.join(map(str, torch.cuda.nccl.version()))}); imports {time.perf_counter() - began:.1f} s", flush=True)
    began = time.perf_counter()
    llm = AsyncLLM.from_engine_args(AsyncEngineArgs(
        model=model, max_model_len=1024, max_num_seqs=4, kv_cache_memory_bytes=1 << 30, enforce_eager=True,
        gpu_memory_utilization=0.1))
    ready = time.perf_counter() - began
    text, tokens = "", 0
    params = SamplingParams(max_tokens=10, ignore_eos=True, temperature=0.8, top_p=0.8)
    async for out in llm.generate("Hello", params, "gpu-setup-034"):
        text, tokens = out.outputs[0].text, len(out.outputs[0].token_ids)
    print(f"setup-034: AsyncLLM ready in {ready:.1f} s, {tokens} tokens: {text!r}", flush=True)
    llm.shutdown()
    print(f"setup-034: on {torch.cuda.get_device_name(0)}", flush=True)  # CUDA in this process only now
    return tokens == 10


if __name__ == "__main__":
    sys.exit(0 if asyncio.run(main(sys.argv[1])) else 1)
CHECK
  python3 /tmp/v034_check.py "$1"
}

if [ -n "${V034_ENV_ONLY:-}" ]; then  # only the functions and 0.34's environment
  use_vllm_034 2> /dev/null
elif [ ! -d "$V034_SITE/vllm" ]; then
  v034_install || return 3 2> /dev/null || exit 3
  use_vllm_034
  [ -f models/ernie-0.3b-random/model.safetensors ] \
    || python3 scripts/make_tiny_model.py models/ernie-0.3b-random --full-size > /tmp/model.log 2>&1 \
    || { tail -20 /tmp/model.log; return 4 2> /dev/null || exit 4; }
  v034_check models/ernie-0.3b-random || { echo "setup-034: the 0.34 check failed" >&2; return 4 2> /dev/null || exit 4; }
else
  use_vllm_034
fi
