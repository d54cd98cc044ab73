"""An engine process lives only as long as the app that started it, however the app ends.

Every process of vLLM's engine (a CPU engine's forked core, a GPU engine's spawned core and workers) calls
`bind_to_parent()` first thing. From then on:
- SIGTERM and SIGINT end it outright until vLLM installs its own handlers: a forked core inherits the app's
  Python handlers, which only set the web server's exit flags, so a stop during the build was swallowed;
- it runs in a session of its own, so Ctrl-C in the app's terminal reaches the app only (the app then stops
  the engine in order);
- the kernel sends it SIGTERM when its parent ends (Linux's parent-death signal), and a watcher thread ends
  it with SIGKILL if it is still there `GRACE_S` after its parent went (vLLM's graceful stop can wait on a
  front end that no longer exists); a parent that ended before the signal was armed is caught at once;
- its pid and start time are appended to the app's marks file (engine/leftovers.py), so that a later start
  can end it should all of the above fail (e.g. the machine's pid namespace was frozen, or a debugger held it).

Only the standard library: it runs in a fresh interpreter before anything of vLLM is imported.
"""

import contextlib
import fcntl
import os
import signal
import threading
import time

MARKS_ENV = "ERNIE_CHAT_ENGINE_MARKS"  # the marks file of the app that starts the engine
APP_PID_ENV = "ERNIE_CHAT_APP_PID"  # the app's own pid, for every engine process it starts
PARENT_ENV = "ERNIE_CHAT_PARENT_PID"  # the pid of the process that starts the next engine process
GRACE_S = 8.0  # how long vLLM's own shutdown may take once the parent is gone
WATCH_EVERY_S = 0.5
PR_SET_PDEATHSIG = 1


def bind_to_parent() -> None:
    """In a new engine process: end with its parent, apart from the app's terminal, marked."""
    parent = os.environ.get(PARENT_ENV, "")
    parent_pid = int(parent) if parent.isdigit() else os.getppid()
    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, signal.SIG_DFL)
    with contextlib.suppress(OSError):
        os.setsid()
    with contextlib.suppress(AttributeError, OSError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM))
    if os.getppid() != parent_pid:  # the parent ended before the signal was armed
        os._exit(1)
    threading.Thread(target=_watch, args=(parent_pid,), name="lifeline", daemon=True).start()
    os.environ[PARENT_ENV] = str(os.getpid())  # the processes this one starts end with it in turn
    mark_this_process()


def _watch(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(WATCH_EVERY_S)
    time.sleep(GRACE_S)
    os.kill(os.getpid(), signal.SIGKILL)


def start_ticks(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot), or None when no such process runs (a zombie has
    ended): with the pid, this names one process, never a later one that was given the same pid."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return None if fields[0] in ("Z", "X") else int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def mark_this_process() -> None:
    """Append `engine_pid engine_start app_pid app_start` to the marks file named by the environment."""
    path, app = os.environ.get(MARKS_ENV), os.environ.get(APP_PID_ENV)
    if not path or not app or not app.isdigit():
        return
    line = f"{os.getpid()} {start_ticks(os.getpid())} {app} {start_ticks(int(app))}\n"
    with contextlib.suppress(OSError), open(path, "a") as marks:
        fcntl.flock(marks, fcntl.LOCK_EX)
        marks.write(line)
