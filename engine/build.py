"""Building vLLM's engine: its imports, the environment a GPU engine gets, the constructor, its metrics.

Kept apart from the engine's lifecycle (engine.py) because this is the part that knows vLLM's
own API; it runs in a worker thread, since the constructor blocks for the whole start-up.
"""

import asyncio
import os
import sys
import threading
import time
import types

from engine.settings import Settings

RUNTIME = sys.modules.setdefault("ernie_chat_runtime", types.ModuleType("ernie_chat_runtime"))
IMPORTS = RUNTIME.__dict__.setdefault("imports", threading.Lock())
# What a GPU engine compiles on a machine's first start (README, "Start-up"): FlashInfer's sampler JIT-compiles
# itself, and vLLM's V2 model runner JIT-compiles ~46 Triton kernels where the V1 runner needs 8 (H200: 52 s
# instead of 28 s to ready with an empty Triton cache); both decode this model as fast. An explicit setting wins.
GPU_ENGINE_ENV = {"VLLM_USE_FLASHINFER_SAMPLER": "0", "VLLM_USE_V2_MODEL_RUNNER": "0"}
# How long vLLM's output handler may keep the event loop while it works through a backlog of engine steps.
MAX_HOLD_S = 0.02


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
    llm = AsyncLLM.from_engine_args(AsyncEngineArgs(**kwargs))
    share_the_event_loop(llm.engine_core)
    return llm, tokenizer


def share_the_event_loop(client, max_hold_s: float = MAX_HOLD_S) -> None:
    """Make vLLM's output handler let the web server run while it catches up with the engine.

    The handler takes engine steps from an asyncio queue, and `Queue.get()` returns at once while the
    queue holds items. When the server falls behind its engine (a busy machine, many chats), the handler
    drained the whole backlog in one go: no reply was flushed and no Stop handled until the engine had
    finished, so a long reply appeared all at once and Stop came too late. Now it yields to the other
    tasks whenever it has held the loop for `max_hold_s`; below that the steps still merge, as before.
    """
    take = client.get_output_async
    held_since = time.monotonic()

    async def take_and_share():
        nonlocal held_since
        queue = getattr(client, "outputs_queue", None)
        if queue is None or queue.empty():  # the get below waits, and others run meanwhile
            outputs = await take()
            held_since = time.monotonic()
            return outputs
        if time.monotonic() - held_since >= max_hold_s:
            await asyncio.sleep(0)
            held_since = time.monotonic()
        return await take()

    client.get_output_async = take_and_share
