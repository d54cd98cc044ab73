"""What an engine process forked from the app does first, before vLLM runs in it.

vLLM forks its engine core from this process wherever it may (a CPU engine's always: engine/vllm_patches.py's
`fork_engine_core`), and a fork copies everything the app holds: its signal handlers and wakeup fd, its web
server's sockets and open connections, its redirected output. `os.register_at_fork` runs `end_with_the_app` in
every child forked while `binding_engine_processes` is active, so the child ends with the app and holds none of
the app's connections (engine/lifeline.py has what a spawned process does instead).
"""

import contextlib
import os
import stat
import sys
import threading

from engine import lifeline
from lifetime.runtime import RUNTIME, kept


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
