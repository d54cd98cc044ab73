"""Building vLLM's engine: its imports, the environment a GPU engine gets, the constructor, its metrics.

Kept apart from the engine's lifecycle (engine.py) because this is the part that knows vLLM's
own API; it runs in a worker thread, since the constructor blocks for the whole start-up.
"""

import os
import sys
import threading
import types

from engine.settings import Settings

RUNTIME = sys.modules.setdefault("ernie_chat_runtime", types.ModuleType("ernie_chat_runtime"))
IMPORTS = RUNTIME.__dict__.setdefault("imports", threading.Lock())
# What a GPU engine compiles on a machine's first start (README, "Start-up"): FlashInfer's sampler JIT-compiles
# itself, and vLLM's V2 model runner JIT-compiles ~46 Triton kernels where the V1 runner needs 8 (H200: 52 s
# instead of 28 s to ready with an empty Triton cache); both decode this model as fast. An explicit setting wins.
GPU_ENGINE_ENV = {"VLLM_USE_FLASHINFER_SAMPLER": "0", "VLLM_USE_V2_MODEL_RUNNER": "0"}


def use_gpu_environment() -> None:
    for variable, value in GPU_ENGINE_ENV.items():
        os.environ.setdefault(variable, value)


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


def build_engine(kwargs: dict, settings: Settings):
    """Runs in a thread: build vLLM's engine and the tokenizer the prompts are made with."""
    AutoTokenizer, AsyncEngineArgs, AsyncLLM = import_engine_modules()

    tokenizer = AutoTokenizer.from_pretrained(
        settings.model, cache_dir=str(settings.download_dir) if settings.download_dir else None)
    return AsyncLLM.from_engine_args(AsyncEngineArgs(**kwargs)), tokenizer
