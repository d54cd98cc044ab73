"""Engine processes an earlier run of this app left behind: found by their marks, ended before a new start.

Each engine process writes a mark when it starts (engine/lifeline.py): its pid and start time, and its app's.
A start reads the marks file in the data folder before it measures free memory or binds the port. A marked
process still alive whose app is gone is ours beyond doubt (same pid, same start time: not a later process
that got the pid), so it is ended; an app still running (a second app process sharing the folder) keeps its
engine; marks of processes that are gone are dropped. Nothing that is not marked is ever touched.
"""

import contextlib
import fcntl
import logging
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from engine.lifeline import APP_PID_ENV, MARKS_ENV, start_ticks

log = logging.getLogger("engine")
MARKS_FILE = "engine-processes"
STOP_WAIT_S = 5.0


@dataclass(frozen=True)
class Mark:
    pid: int
    start: int | None
    app_pid: int
    app_start: int | None

    @classmethod
    def parse(cls, line: str) -> "Mark | None":
        parts = line.split()
        if len(parts) != 4 or not parts[0].isdigit() or not parts[2].isdigit():
            return None
        start, app_start = (int(p) if p.isdigit() else None for p in (parts[1], parts[3]))
        return cls(int(parts[0]), start, int(parts[2]), app_start)

    def __str__(self) -> str:
        return f"{self.pid} {self.start} {self.app_pid} {self.app_start}"

    @property
    def alive(self) -> bool:
        return self.start is not None and start_ticks(self.pid) == self.start

    @property
    def app_alive(self) -> bool:
        return self.app_start is not None and start_ticks(self.app_pid) == self.app_start


def marks_path(data_folder: Path) -> Path:
    return data_folder / MARKS_FILE


def mark_engines_of_this_app(data_folder: Path) -> None:
    """Engine processes started from now on mark themselves in `data_folder`'s marks file."""
    data_folder.mkdir(parents=True, exist_ok=True)
    os.environ[MARKS_ENV] = str(marks_path(data_folder).resolve())
    os.environ[APP_PID_ENV] = str(os.getpid())


def end_leftovers(data_folder: Path) -> list[str]:
    """End the engine processes whose app is gone; return what was said about each (also logged and printed)."""
    path = marks_path(data_folder)
    if not path.is_file():
        return []
    said = []
    with open(path, "r+") as marks:
        fcntl.flock(marks, fcntl.LOCK_EX)
        kept = []
        for mark in filter(None, map(Mark.parse, marks.read().splitlines())):
            if not mark.alive:
                continue
            if mark.app_alive:
                kept.append(mark)
                continue
            said.append(_end(mark))
        marks.seek(0)
        marks.truncate()
        marks.writelines(f"{mark}\n" for mark in kept)
    for text in said:
        log.warning("%s", text)
        print(f"ERNIE Chat: {text}", flush=True)
    return said


def _end(mark: Mark) -> str:
    held = _resident_gib(mark.pid)
    what = (f"an engine process of an earlier run of this app (pid {mark.pid}, {held:.1f} GiB resident) was still "
            f"running after its app (pid {mark.app_pid}) had ended, holding its memory and maybe the app's port")
    try:
        os.kill(mark.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_WAIT_S
        while mark.alive and time.monotonic() < deadline:
            time.sleep(0.1)
        if mark.alive:
            os.kill(mark.pid, signal.SIGKILL)
            while mark.alive and time.monotonic() < deadline + STOP_WAIT_S:
                time.sleep(0.1)
    except ProcessLookupError:
        pass
    except PermissionError as error:
        return f"{what}; it could not be ended ({error}): end it with `kill -9 {mark.pid}`, then start again."
    if mark.alive:
        return f"{what}; it did not end: end it with `kill -9 {mark.pid}`, then start again."
    return f"{what}; it was ended."


def _resident_gib(pid: int) -> float:
    with contextlib.suppress(OSError, ValueError, IndexError):
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**30
    return 0.0
