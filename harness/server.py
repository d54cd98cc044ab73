"""Start and stop a real `chainlit run app.py` server on a free loopback port, for tests and the benchmark."""

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
TAG = "ERNIE_CHAT_TEST_SERVER"  # in the environment of a test server and of every process it starts


def tagged(tag: str, log_path: Path | None = None) -> list[psutil.Process]:
    """The running processes (zombies aside) that a server started: its environment carries `tag`, or (vLLM's
    engine core renames itself over the memory that holds its environment) a `VLLM::` process holds the server's
    log `log_path` open, as a core forked from the server does."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                continue
            if proc.environ().get(TAG) == tag or (
                    log_path is not None and " ".join(proc.cmdline()).startswith("VLLM::")
                    and any(Path(f.path) == log_path for f in proc.open_files())):
                found.append(proc)
        except psutil.Error:
            pass
    return found


def engine_processes(since: float = 0.0) -> list[psutil.Process]:
    """vLLM's engine processes running now (they name themselves `VLLM::...`), started at `since` or later."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.status() != psutil.STATUS_ZOMBIE and " ".join(proc.cmdline()).startswith("VLLM::") \
                    and proc.create_time() >= since:
                found.append(proc)
        except psutil.Error:
            pass
    return found


def describe(procs: list[psutil.Process]) -> str:
    said = []
    for proc in procs:
        try:
            said.append(f"pid {proc.pid} (parent {proc.ppid()}): {' '.join(proc.cmdline())[:80]}")
        except psutil.Error:
            said.append(f"pid {proc.pid} (gone)")
    return "; ".join(said)


def stop_process_group(proc: subprocess.Popen, timeout: float = 30) -> None:
    """SIGTERM to a server started in a session of its own and everything it started, SIGKILL after `timeout`."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ChainlitServer:
    def __init__(self, env: dict[str, str], log_path: Path, port: int | None = None, watch: bool = False,
                 host: str = "127.0.0.1", root: Path = ROOT):
        """`host` is where it listens (0.0.0.0: every address); the tests reach it on 127.0.0.1 either way.
        `root`: the checkout whose app.py it runs (the benchmark compares another commit's)."""
        self.root = root
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # each server keeps its chats in its own database beside its log, unless the test names one
        self.tag = uuid.uuid4().hex
        self.env = {**os.environ, "CHAT_HISTORY_DB": str(log_path.parent / "chats.db"), **env,
                    "CHAINLIT_HOST": host, "PYTHONUNBUFFERED": "1", TAG: self.tag}
        self.left_behind: list[str] = []  # what `stop()` found still running after the server had exited
        if "LD_PRELOAD" not in env:  # vLLM's CPU build writes its own into this process's environment on import:
            self.env.pop("LD_PRELOAD", None)  # the server's launcher (.venv/bin/chainlit) chooses the preloads
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None
        self.watch = watch

    def start(self, timeout: float = 120) -> "ChainlitServer":
        return self.launch().wait_answering(timeout)

    def launch(self) -> "ChainlitServer":
        """Start the process and return at once (`wait_answering` waits for its page)."""
        script = Path(sys.executable).with_name("chainlit")  # a venv has it; a bare interpreter runs the module
        chainlit = [str(script)] if script.exists() else [sys.executable, "-m", "chainlit"]
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [*chainlit, "run", "app.py", "-h", "--port", str(self.port), *(["-w"] if self.watch else [])],
            cwd=self.root, env=self.env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        return self

    def wait_answering(self, timeout: float = 120) -> "ChainlitServer":
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"chainlit exited with {self.proc.returncode}; see {self.log_path}")
            try:
                urllib.request.urlopen(self.url, timeout=2)
                return self
            except OSError:
                time.sleep(0.5)
        raise TimeoutError(f"chainlit did not answer on {self.url}; see {self.log_path}")

    def stop(self, timeout: float = 30, ctrl_c: bool = False) -> int:
        """SIGTERM, as a service manager would; returns the exit code. `ctrl_c`: SIGINT to the whole process
        group instead, as a terminal sends it. Whatever the server started and left running is ended too, and
        named in `left_behind` (an engine process must end with its app: tests/test_orphans.py)."""
        if self.proc is None:
            return 0
        try:
            if self.proc.poll() is not None:
                return self.proc.returncode
            if ctrl_c:
                os.killpg(self.proc.pid, signal.SIGINT)
            else:
                self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                return self.proc.wait()
        finally:
            self.log.close()
            self.end_left_behind()

    def kill(self, signum: int = signal.SIGKILL, group: bool = False) -> int:
        """End the server abruptly with `signum` (to its whole process group with `group`, as Ctrl-C in a terminal
        does); returns its exit code. What it started is left to end by itself (`wait_left_behind`)."""
        (os.killpg if group else os.kill)(self.proc.pid, signum)
        try:
            return self.proc.wait(60)
        finally:
            self.log.close()

    def engine_process(self, timeout: float = 240) -> psutil.Process:
        """The engine core the server started, as soon as it names itself (vLLM does so first thing)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for child in psutil.Process(self.proc.pid).children(recursive=True):
                try:
                    if "EngineCore" in " ".join(child.cmdline()):
                        return child
                except psutil.Error:
                    pass
            time.sleep(0.05)
        raise TimeoutError(f"no engine process appeared; see {self.log_path}")

    def wait_left_behind(self, timeout: float = 15) -> list[psutil.Process]:
        """The processes the server started that are still running `timeout` seconds after it exited."""
        deadline = time.monotonic() + timeout
        while (left := [p for p in tagged(self.tag, self.log_path) if p.pid != self.proc.pid]) and \
                time.monotonic() < deadline:
            time.sleep(0.2)
        return left

    def end_left_behind(self) -> None:
        left = [p for p in tagged(self.tag, self.log_path) if self.proc is None or p.pid != self.proc.pid]
        if left:
            self.left_behind.append(describe(left))
            for proc in left:
                try:
                    proc.kill()
                except psutil.Error:
                    pass
            psutil.wait_procs(left, timeout=10)


@contextlib.contextmanager
def restartable_with_history(engine_env: dict, folder: Path):
    """`start()`: a server of the app preset with its own history database in `folder` (the API off), started anew
    at each call on the same database, as a user's restart is; every one started is stopped at the end."""
    from harness.presets import APP_PRESET

    env = {**engine_env, "CHAT_CUSTOM_PRESET": json.dumps(APP_PRESET), "CHAT_HISTORY_DB": str(folder / "chats.db"),
           "CHAT_API": "false"}
    servers: list[ChainlitServer] = []

    def start() -> ChainlitServer:
        servers.append(ChainlitServer(env, folder / f"chainlit-{len(servers)}.log").start())
        return servers[-1]
    try:
        yield start
    finally:
        for server in servers:
            server.stop()
