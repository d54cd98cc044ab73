"""Before and after an engine start: which preset runs on which device, and why a start failed.

Checks that can be made cheaply (is there a GPU, does the budget fit the free
memory) are made before vLLM is asked, so the user gets a precise message in
seconds instead of a generic failure after a long load.
"""

import os
from pathlib import Path

from engine import hardware, presets
from engine.errors import (ChatError, EngineStartError, ModelNotFoundError, NoGpuError,
                           OutOfMemoryError)
from engine.settings import Settings

GIB = presets.GIB
OOM_MARKERS = ("out of memory", "less than desired gpu memory", "no available memory for the cache",
               "larger than the available kv cache memory", "insufficient memory")
MISSING_MARKERS = ("repository not found", "is not a local folder", "couldn't connect", "cannot find the requested files",
                   "does not appear to have a file", "incorrect path_or_model_id", "401 client error",
                   "outgoing traffic has been disabled", "can't load the configuration", "no such file or directory",
                   "repo id must be in the form")


def check_model(model: str) -> None:
    """A model given as a folder must exist; a hub id is checked by the download itself."""
    looks_local = model.startswith((".", "/", "~")) or os.sep + os.sep in model or model.count("/") > 1
    if looks_local and not Path(model).expanduser().is_dir():
        raise ModelNotFoundError(model, "there is no such folder")


def resolve_preset(name: str, settings: Settings) -> tuple[hardware.Device, presets.Preset]:
    """The device to run on and the concrete preset (`auto` resolved) for it."""
    check_model(settings.model)
    preset = presets.lookup(name, settings.custom_preset)
    can_use_gpu = settings.device != "cpu" and not hardware.cpu_build()
    gpu = hardware.gpu() if can_use_gpu else None
    if preset is None:  # auto
        if settings.device == "cuda" and gpu is None:
            raise NoGpuError(name)
        preset = presets.pick_auto(gpu.free_bytes / GIB if gpu else None)
    if preset.device == "cpu" or settings.device == "cpu":
        return hardware.cpu(), presets.BUILT_IN["cpu"] if preset.device == "cuda" else preset
    if gpu is None:
        raise NoGpuError(preset.name)
    if preset.budget_gib * GIB > gpu.free_bytes:
        raise OutOfMemoryError(
            preset.name, f"it needs {preset.budget_gib:.1f} GiB, {gpu.free_bytes / GIB:.1f} GiB of "
            f"{gpu.total_bytes / GIB:.1f} GiB is free on {gpu.name}", presets.smaller_than(preset))
    return gpu, preset


def classify_start_error(error: Exception, model: str, preset: presets.Preset) -> ChatError:
    """Turn whatever vLLM or the hub raised into an error that says what to do."""
    if isinstance(error, ChatError):
        return error
    text = f"{type(error).__name__}: {error}"
    lowered = text.lower()
    if any(marker in lowered for marker in OOM_MARKERS):
        return OutOfMemoryError(preset.name, _first_line(text), presets.smaller_than(preset))
    if any(marker in lowered for marker in MISSING_MARKERS) or type(error).__name__ in (
            "RepositoryNotFoundError", "LocalEntryNotFoundError", "GatedRepoError", "HFValidationError"):
        return ModelNotFoundError(model, _first_line(text))
    return EngineStartError(
        f"The model engine did not start ({_first_line(text)}).",
        "The server log has the cause. If it mentions memory, choose a smaller preset.",
    )


def _first_line(text: str, limit: int = 300) -> str:
    line = text.strip().splitlines()[0] if text.strip() else text
    return line if len(line) <= limit else line[:limit] + "..."
