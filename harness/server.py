"""Start and stop a real `chainlit run app.py` server on a free loopback port, for tests and the benchmark."""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


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
        self.env = {**os.environ, "CHAT_HISTORY_DB": str(log_path.parent / "chats.db"), **env,
                    "CHAINLIT_HOST": host, "PYTHONUNBUFFERED": "1"}
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
        group instead, as a terminal sends it."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
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
