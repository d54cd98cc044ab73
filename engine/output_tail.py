"""What the engine process printed: where the root cause of a failed start is found.

vLLM's engine core runs in a child process. When its start fails, the caller gets
only "Engine core initialization failed. See root cause above."; the cause (too
little memory, an old driver, a damaged weights file) is printed by the child to
the stdout and stderr it inherited from this process (vLLM logs to stdout,
tracebacks go to stderr). So while the engine is built, this process's fds 1 and
2 are pipes, which the engine process inherits and keeps: a thread per pipe
copies every byte on to where it went before, so the server log stays as it was,
and keeps the last lines, which the start-up code reads back after a failure.
"""

import collections
import contextlib
import os
import threading

KEEP_LINES = 400
MAX_LINE = 1 << 16


class OutputTail:
    def __init__(self, keep: int = KEEP_LINES, fds: tuple[int, ...] = (1, 2)):
        self._lines: collections.deque[str] = collections.deque(maxlen=keep)
        self._count = 0
        self._lock = threading.Lock()
        self._fds = fds

    @contextlib.contextmanager
    def capturing(self):
        """Inside, fds 1 and 2 go through pipes into the tail; a process started inside keeps them for life."""
        restore = []
        for fd in self._fds:
            read_fd, write_fd = os.pipe()
            forward_fd = os.dup(fd)
            restore.append((fd, os.dup(fd)))
            os.dup2(write_fd, fd)
            os.close(write_fd)
            threading.Thread(target=self._copy, args=(read_fd, forward_fd), name=f"output-tail-{fd}",
                             daemon=True).start()
        try:
            yield
        finally:
            for fd, original in restore:
                os.dup2(original, fd)
                os.close(original)

    def mark(self) -> int:
        """A position; `since(mark)` returns the lines printed after it."""
        with self._lock:
            return self._count

    def since(self, mark: int) -> list[str]:
        with self._lock:
            new = min(self._count - mark, len(self._lines))
            return list(self._lines)[len(self._lines) - new:] if new > 0 else []

    def _copy(self, read_fd: int, forward_fd: int) -> None:
        partial = b""
        while chunk := os.read(read_fd, 1 << 16):
            _write_all(forward_fd, chunk)
            *lines, partial = (partial + chunk).split(b"\n")
            partial = partial[-MAX_LINE:]  # progress bars redraw one line with \r, without an end
            with self._lock:
                self._lines.extend(line.decode(errors="replace") for line in lines)
                self._count += len(lines)
        os.close(read_fd)
        os.close(forward_fd)


def _write_all(fd: int, data: bytes) -> None:
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:  # the real stderr is gone (a closed terminal): keep draining the pipe
        pass
