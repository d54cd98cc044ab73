"""Peak and leftover memory of a configuration: NVML for the whole GPU, or its processes' memory (PSS) on the CPU.

The engine core is a separate process, so counters inside this process would miss
it: the GPU is measured as a whole, minus what was in use before the run.
"""

import threading
import time

import psutil

from engine import hardware

GIB = 1 << 30


class MemoryWatch:
    def __init__(self, interval_s: float | None = None, children_only: bool = False):
        """`children_only`: on the CPU, count the processes this one starts (a server under test), not itself.

        The CPU is read every 0.25 s, the GPU every 0.02 s: a process's PSS is summed over its whole address
        space while the process waits, and read every 20 ms it slowed a CPU engine on 2 cores.
        """
        self.gpu = hardware.gpu_used_bytes() is not None
        interval_s = interval_s or (0.02 if self.gpu else 0.25)
        self.children_only = children_only
        self.baseline = self._read_total() if self.gpu else 0
        self.peak = 0
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _read_total(self) -> int:
        if self.gpu:
            return hardware.gpu_used_bytes() or 0
        me = psutil.Process()
        children = [p.pid for p in me.children(recursive=True)]
        return hardware.memory_bytes(children if self.children_only else [me.pid, *children])

    def used(self) -> int:
        return max(self._read_total() - self.baseline, 0)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.used())
            time.sleep(self.interval_s)

    def start(self) -> "MemoryWatch":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def peak_gib(self) -> float:
        return self.peak / GIB

    def used_gib(self) -> float:
        return self.used() / GIB

    def left_after_close_mib(self) -> float:
        """What is still held once the engine is gone (GPU: waits up to 30 s for it to come back)."""
        if self.gpu:
            back = hardware.wait_gpu_memory_back(self.baseline, timeout_s=15, slack_bytes=2 * hardware.MIB)
            return back / hardware.MIB
        return hardware.memory_bytes(list(hardware.child_pids())) / hardware.MIB
