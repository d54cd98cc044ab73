"""What an engine's first start on a machine computes once and caches, done ahead: off the first chat's path.

Two things, measured on a fresh H200 (docs/benchmarks.md, "Start-up"): vLLM inspects the model's class in a
fresh Python that imports torch and vLLM again (about 20 s there; cached in `~/.cache/vllm/modelinfos` by the
hash of the class's source, whatever the weights), and a GPU engine's sampler, FlashInfer, has nvcc compile
its kernels the first time they run (1 min 46 s on 8 cores there; cached in `~/.cache/flashinfer`).
`scripts/setup.sh` does both when it installs the app (`python -m engine.machine_cache`); the server does
them again in the background from its start where they are missing (the inspection in its preload thread,
`build.inspect_model_ahead`; the kernels in a child process, `compile_ahead`). An engine uses FlashInfer's
sampler only once its kernels are built (`sampler_built`), vLLM's own before: no start waits for nvcc, and a
machine without nvcc still chats. A mark per FlashInfer version and GPU (`~/.cache/ernie-chat/kernels/`)
says they were built, without importing FlashInfer (which imports torch) in the app's process; a mark whose
build was deleted since costs one compilation in the engine's warm-up.

The kernels compile in a child process because FlashInfer asks CUDA for the GPU's architecture: the app's own
process must not touch CUDA, or vLLM could not fork its engine core from it. The child ends with the app
(engine/lifeline.py).
"""

import importlib.metadata
import importlib.util
import logging
import os
import subprocess
import sys
from pathlib import Path

from engine import hardware, lifeline

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURES = ("Ernie4_5ForCausalLM",)  # ERNIE-4.5-0.3B's, inspected ahead when its weights are not here yet


def cache_dir() -> Path:
    """The app's own per-machine cache folder (`$XDG_CACHE_HOME/ernie-chat`), which the int8 weights share."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ernie-chat"


def has_flashinfer() -> bool:
    return importlib.util.find_spec("flashinfer") is not None


def mark(gpu_name: str) -> Path:
    """The file that says FlashInfer's sampling kernels were built for this version of it and this GPU."""
    try:
        version = importlib.metadata.version("flashinfer-python")
    except importlib.metadata.PackageNotFoundError:  # installed under another name: one mark for any version
        version = "unknown"
    name = "".join(c if c.isalnum() or c in ".-" else "_" for c in f"flashinfer-{version}-{gpu_name}")
    return cache_dir() / "kernels" / name


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
    return subprocess.Popen([sys.executable, "-m", "engine.machine_cache", "--child"], cwd=ROOT, env=env,
                            stdin=subprocess.DEVNULL)


def compile_sampler() -> bool:
    """Build FlashInfer's sampling kernels for this machine's GPU; True when they were built here."""
    module = sampler_module()
    if module.is_compiled:
        return False
    module.build(verbose=False)
    return True


def inspect_architectures(names) -> None:
    """vLLM's inspection of these model classes (architecture names), each a no-op once cached."""
    from vllm import ModelRegistry

    for architecture in names:
        registered = ModelRegistry.models.get(architecture)
        if hasattr(registered, "inspect_model_cls"):
            registered.inspect_model_cls()
        else:  # vLLM moved it: the first start inspects the model itself, seconds later (tests/test_vllm_seams.py)
            logging.getLogger("engine").warning("vLLM's model registry cannot inspect %s ahead of the start",
                                                architecture)


def inspect_models() -> None:
    """vLLM's inspection of the model classes the app serves."""
    inspect_architectures(ARCHITECTURES)
    print("engine.machine_cache: vLLM knows the model's class")


def main(argv: list[str]) -> int:
    if "--child" in argv:  # the server's background compilation: the kernels only
        lifeline.bind_to_parent()
    else:
        inspect_models()
    gpu = hardware.gpu()
    if gpu is None or not has_flashinfer():
        print("engine.machine_cache: no GPU or no FlashInfer here; no kernels to compile")
        return 0
    try:
        built = compile_sampler()
        done = mark(gpu.name)
        done.parent.mkdir(parents=True, exist_ok=True)
        done.touch()
    except Exception as error:
        print(f"engine.machine_cache: compiling FlashInfer's sampling kernels failed ({error}); engines sample "
              "with vLLM's own sampler meanwhile, and the server tries again at its start", file=sys.stderr)
        return 1
    print("engine.machine_cache: FlashInfer's sampling kernels " + ("compiled" if built else "were compiled "
                                                                    "already"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
