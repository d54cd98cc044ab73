"""The GPU kernels a first reply would otherwise compile, compiled ahead in a process of their own.

A GPU engine samples top p with FlashInfer (engine/build.py), whose kernels nvcc compiles the first time
they run on a machine (then cached in `~/.cache/flashinfer`): tens of seconds that would fall on the first
chat's path. `scripts/setup.sh` compiles them when it installs the GPU build (`python -m engine.kernels`),
and the app's server starts the same command in the background (`compile_ahead`) when they are not built
yet, beside `import vllm`. An engine uses FlashInfer's sampler only once they are (`sampler_built`), and
vLLM's own sampler before: no start waits for nvcc, and a machine without nvcc still chats. A mark per
FlashInfer version and GPU (`~/.cache/ernie-chat/kernels/`) says they were built, without importing
FlashInfer (which imports torch) in the app's process; a mark whose build was deleted since costs one
compilation in the engine's warm-up.

The compilation runs in a child process because it asks CUDA for the GPU's architecture: the app's own
process must not touch CUDA, or vLLM could not fork its engine core from it. The child ends with the app
(engine/lifeline.py).
"""

import importlib.metadata
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from engine import hardware, lifeline

ROOT = Path(__file__).resolve().parent.parent


def has_flashinfer() -> bool:
    return importlib.util.find_spec("flashinfer") is not None


def mark(gpu_name: str) -> Path:
    """The file that says FlashInfer's sampling kernels were built for this version of it and this GPU."""
    version = importlib.metadata.version("flashinfer-python")
    name = "".join(c if c.isalnum() or c in ".-" else "_" for c in f"flashinfer-{version}-{gpu_name}")
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ernie-chat" / "kernels" / name


def sampler_built() -> bool:
    """Whether FlashInfer's sampling kernels were built for this machine's first GPU (by its mark)."""
    gpu = hardware.gpu()
    return gpu is not None and has_flashinfer() and mark(gpu.name).exists()


def sampler_module():
    """FlashInfer's JIT specification of its sampling kernels (what vLLM's top p and top k call)."""
    from flashinfer.jit.sampling import gen_sampling_module

    return gen_sampling_module()


def compile_ahead(gpu_name: str) -> subprocess.Popen | None:
    """Start compiling FlashInfer's sampling kernels for GPU `gpu_name` (NVML's name) in a child process,
    unless they were built (or FlashInfer is not installed); the child is returned, not waited for."""
    if not has_flashinfer() or mark(gpu_name).exists():
        return None
    env = {**os.environ, lifeline.PARENT_ENV: str(os.getpid())}
    return subprocess.Popen([sys.executable, "-m", "engine.kernels", "--child"], cwd=ROOT, env=env,
                            stdin=subprocess.DEVNULL)


def compile_sampler() -> bool:
    """Build FlashInfer's sampling kernels for this machine's GPU; True when they were built here."""
    module = sampler_module()
    if module.is_compiled:
        return False
    module.build(verbose=False)
    return True


def main(argv: list[str]) -> int:
    if "--child" in argv:
        lifeline.bind_to_parent()
    gpu = hardware.gpu()
    if gpu is None or not has_flashinfer():
        print("engine.kernels: no GPU or no FlashInfer here; nothing to compile")
        return 0
    try:
        built = compile_sampler()
        done = mark(gpu.name)
        done.parent.mkdir(parents=True, exist_ok=True)
        done.touch()
    except Exception as error:
        print(f"engine.kernels: compiling FlashInfer's sampling kernels failed ({error}); the engine's first start "
              "compiles them again and says why if it cannot", file=sys.stderr)
        return 1
    print("engine.kernels: FlashInfer's sampling kernels " + ("compiled" if built else "were compiled already"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
