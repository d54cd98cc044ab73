"""Start and stop llama.cpp's `llama-server` (built by bench/llama_cpp.sh) on a loopback port, for the peers.

`parallel` slots of `ctx_per_slot` tokens each: without --kv-unified, llama-server splits --ctx-size
evenly among its slots. It serves the OpenAI API at `url`; /v1/completions takes a prompt of token ids.
"""

import subprocess
import time
import urllib.request
from pathlib import Path

from harness.server import free_port, stop_process_group

ROOT = Path(__file__).resolve().parent.parent


def llama_cpp_home() -> str:
    """The folder of llama.cpp's build and converter, built first if needed (bench/llama_cpp.sh)."""
    return subprocess.run(["bash", str(ROOT / "bench" / "llama_cpp.sh")], check=True, stdout=subprocess.PIPE,
                          text=True).stdout.split()[-1]


class LlamaServer:
    def __init__(self, gguf: Path, log_path: Path, parallel: int, ctx_per_slot: int, threads: int | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log_path = log_path
        self.command = [f"{llama_cpp_home()}/bin/llama-server", "-m", str(gguf),
                        "--host", "127.0.0.1", "--port", str(self.port),
                        "--parallel", str(parallel), "--ctx-size", str(parallel * ctx_per_slot), "--cont-batching",
                        "--n-gpu-layers", "999",  # every layer on the GPU of a CUDA build; a CPU build ignores it
                        *(["--threads", str(threads)] if threads else [])]
        self.proc: subprocess.Popen | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def start(self, timeout: float = 300) -> "LlamaServer":
        with open(self.log_path, "a") as log:
            self.proc = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama-server exited with {self.proc.returncode}; see {self.log_path}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2)  # 503 while loading
                return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise TimeoutError(f"llama-server did not answer on {self.url}; see {self.log_path}")

    def stop(self) -> None:
        if self.proc is not None:
            stop_process_group(self.proc)
