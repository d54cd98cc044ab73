"""One vLLM engine as this process hosts it: built, its processes known, its memory measured, asleep, stopped.

`ChatEngine` (engine/engine.py) decides when an engine starts, sleeps, switches and stops; a `VllmHost` is what
it starts and stops: vLLM's `AsyncLLM` and the tokenizer the prompts are made with, every process vLLM started
for it (known from the first moment of the build, so that a shutdown during the build ends them too), the GPU
memory it holds above what was in use before, and vLLM's sleep mode on a GPU. One host per engine built; a
switch or a restart builds a new one. Beside it, what the process does for vLLM before and after any host: vLLM
prepared ahead of the first start (`preload`), and Ctrl-C or SIGTERM seen as the stop asked for (`on_stop_signals`).
"""

import asyncio
import logging
import os
import signal
import threading
from collections.abc import Awaitable, Callable

from engine import build, download, hardware, machine_cache, vllm_patches
from engine.chat import stop_token_ids
from engine.output_tail import OutputTail
from lifetime.runtime import kept

log = logging.getLogger("engine")
ENGINE_OUTPUT = kept("engine_output", OutputTail)
# vLLM's sleep level for an idle GPU engine: 1 moves the weights to CPU memory and drops the KV cache, so waking
# copies 0.72 GB back; 2 would drop the weights too and read them from disk again (docs/benchmarks.md, "Idle").
SLEEP_LEVEL = 1


class VllmHost:
    def __init__(self, device: hardware.Device):
        self.device = device
        self.llm = None  # vLLM's AsyncLLM once built
        self.tokenizer = None
        self.stop_ids: list[int] = []
        self.pids: set[int] = set()  # the processes vLLM started for this engine
        self.sleep_mode = False  # built with vLLM's sleep mode (a GPU engine whose idle timer runs)
        self.asleep = False  # in vLLM's sleep mode
        self.stopped = threading.Event()  # set when it is stopped on purpose: its end is then no crash
        self._building_beside: set[int] | None = None  # during the build: the processes that were there before
        self._gpu_baseline = hardware.gpu_used_bytes() if device.kind == "cuda" else None

    @property
    def running(self) -> bool:
        return self.llm is not None and not self.llm.errored

    async def build(self, kwargs: dict, waiting: Callable[[], Awaitable[None]],
                    explain: Callable[[Exception, list[str]], Exception]) -> None:
        """vLLM's constructor, in a thread; `waiting()` is awaited about once a second meanwhile (progress). A
        failed build raises `explain(error, what the engine's processes printed since the build began)`."""
        self._building_beside = hardware.child_pids()
        self.sleep_mode = bool(kwargs.get("enable_sleep_mode"))
        mark = ENGINE_OUTPUT.mark()
        try:
            with ENGINE_OUTPUT.capturing():  # the engine process keeps these pipes as its stdout and stderr
                building = asyncio.ensure_future(asyncio.to_thread(build.build_engine, kwargs))
                while not building.done():
                    await waiting()
                    await asyncio.wait([building], timeout=1.0)
            self.pids = hardware.child_pids() - self._building_beside
            try:
                self.llm, self.tokenizer = building.result()
            except Exception as error:
                await self.stop()
                await asyncio.sleep(0.2)  # the engine process's last lines are still in the pipe
                raise explain(error, ENGINE_OUTPUT.since(mark)) from error
        finally:
            self._building_beside = None
        # how vLLM's output handler reads the engine: sharing the loop, and quiet when we stop it
        vllm_patches.share_the_event_loop(self.llm.engine_core)
        vllm_patches.end_quietly_when_stopped(self.llm.engine_core, self.stopped.is_set)
        self.stop_ids = stop_token_ids(self.tokenizer)

    @property
    def sleeps_on_device(self) -> bool:
        """Whether it falls asleep in vLLM's sleep mode: a GPU engine built with it. Any other engine stops (a CPU
        engine has no sleep mode; on a GPU engine built without it, vLLM's sleep keeps all of its memory)."""
        return self.llm is not None and self.device.kind == "cuda" and self.sleep_mode

    async def sleep(self) -> None:
        await self.llm.sleep(SLEEP_LEVEL)
        self.asleep = True

    async def wake_up(self) -> None:
        await self.llm.wake_up()
        self.asleep = False

    async def abort(self, request_id: str) -> None:
        try:
            await self.llm.abort(request_id)
        except Exception:
            log.debug("abort of %s failed", request_id, exc_info=True)

    async def abort_every_request(self) -> bool:
        """Every request of this engine, the chats' and the API's; False when vLLM could not (said in the log)."""
        return self.llm is not None and await vllm_patches.abort_every_request(self.llm)

    def shutdown(self) -> None:
        """Stop the engine and its processes; safe to call any number of times, from any thread.

        During vLLM's build the engine is not ours yet, but its processes are: those started since the build
        began are ended (a SIGTERM, which a process being built obeys at once), and the build then fails."""
        llm, self.llm = self.llm, None
        if llm is not None:
            self.stopped.set()
            llm.shutdown()
        beside = self._building_beside
        if beside is not None:
            self.stopped.set()
            self.pids |= hardware.child_pids() - beside
            hardware.terminate(self.pids)
        survivors = hardware.wait_gone(self.pids)
        if survivors:
            log.error("engine processes survived shutdown: %s", survivors)
        self.pids = set()

    async def stop(self) -> None:
        """Shut the engine down and wait until its processes and GPU memory are gone."""
        await asyncio.to_thread(self.shutdown)
        if self._gpu_baseline is not None:
            held = await asyncio.to_thread(hardware.wait_gpu_memory_back, self._gpu_baseline)
            if held:
                log.warning("%.0f MiB of GPU memory still held after shutdown", held / hardware.MIB)

    def held_bytes(self) -> int | None:
        """What it holds now: on a GPU the whole device's use above the baseline, also while asleep; on the CPU its
        processes' memory. None when it holds nothing (stopped) or the GPU cannot say."""
        if self.llm is None:
            return None
        if self.device.kind == "cuda":
            used = hardware.gpu_used_bytes()
            return None if used is None else max(used - (self._gpu_baseline or 0), 0)
        return hardware.memory_bytes(list(self.pids))


def preload(settings) -> None:
    """Import vLLM ahead of the first start (it takes seconds), have it inspect the model's class (once per
    machine: `build.inspect_model_ahead`) and, for a GPU engine, have FlashInfer's sampling kernels compiled
    meanwhile (once per machine: engine/machine_cache.py); safe to call from a thread, which it keeps until that
    compilation ends."""
    compiling = None
    try:
        gpu = None if settings.device == "cpu" or hardware.cpu_build() else hardware.gpu()
        compiling = machine_cache.compile_ahead(gpu.name) if gpu else None
        build.import_engine_modules()
        build.inspect_model_ahead(download.local_folder(settings))  # its folder, if it is here
    except Exception:
        log.exception("preparing vLLM ahead of time failed; the first start does it again")
    if compiling is not None:
        compiling.wait()


def on_stop_signals(stopping: Callable[[], None]) -> None:
    """Call `stopping()` on Ctrl-C or SIGTERM, then whatever handled the signal before (the web server's), or
    its default action. Call from the main thread once the web server has installed its handlers."""
    for number in (signal.SIGINT, signal.SIGTERM):
        previous = signal.getsignal(number)

        def handler(signum, frame, previous=previous):
            stopping()
            if callable(previous):
                previous(signum, frame)
            elif previous != signal.SIG_IGN:  # the default action: end the process
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)

        signal.signal(number, handler)
