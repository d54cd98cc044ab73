"""After the test suite: fail when an engine process, or anything a test server started, still runs.

`python -m harness.survivors` lists vLLM's engine processes (they name themselves `VLLM::...`) and processes that
carry a test server's tag (harness/server.py), of this checkout only (run in its folder: another checkout's tests
on the same machine are not this run's), waits a few seconds for any that are just ending, and exits 1
naming those still there (then ends them, so that the machine is left clean).
"""

import os
import sys
import time
from pathlib import Path

import psutil

from harness.server import ROOT, TAG, describe, engine_processes

WAIT_S = 10


def _of_this_checkout(proc: psutil.Process) -> bool:
    """Whether `proc` runs in this checkout (another checkout's servers on the same machine are not this run's)."""
    try:
        return Path(proc.cwd()).resolve().is_relative_to(ROOT)
    except (psutil.Error, OSError):
        return False


def survivors() -> list[psutil.Process]:
    found = {proc.pid: proc for proc in engine_processes()}
    for proc in psutil.process_iter():
        try:
            if proc.pid != os.getpid() and proc.status() != psutil.STATUS_ZOMBIE and TAG in proc.environ():
                found.setdefault(proc.pid, proc)
        except psutil.Error:
            pass
    return [proc for proc in found.values() if _of_this_checkout(proc)]


def main() -> int:
    deadline = time.monotonic() + WAIT_S
    while (left := survivors()) and time.monotonic() < deadline:
        time.sleep(0.5)
    if not left:
        print("survivors: no engine process and nothing of a test server is left running")
        return 0
    print(f"survivors: still running after the tests: {describe(left)}", file=sys.stderr)
    for proc in left:
        try:
            proc.kill()
        except psutil.Error:
            pass
    return 1


if __name__ == "__main__":
    sys.exit(main())
