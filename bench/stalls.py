"""Do other processes stand still while vLLM's CPU engine generates? (docs/reliability.md)

    python -m bench.stalls                       # one `vllm serve` (tiny model), a streamed 8,000-token completion
    python -m bench.stalls --nice 10             # the same server at a lower priority
    OMP_WAIT_POLICY=PASSIVE python -m bench.stalls
    python -m bench.stalls --spinners            # no server: one process on sched_yield, one busy, a core each

Meanwhile three watcher processes (pinned to core 0, to core 1, and free) loop on `sleep(0.1)` and note the
longest extra time one sleep took. Prints one JSON line: those, the longest gap between two pieces of the
stream, and how far the kernel's pressure counters (`/proc/pressure/*`, "some", seconds) and the virtual CPUs'
steal time grew while it streamed.
"""

import argparse
import json
import multiprocessing
import os
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SECONDS = 40


def watch(cpu, results, seconds: float) -> None:
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    worst, end = 0.0, time.monotonic() + seconds
    while time.monotonic() < end:
        began = time.monotonic()
        time.sleep(0.1)
        worst = max(worst, time.monotonic() - began - 0.1)
    results.put((cpu, round(worst, 2)))


def spin(cpu: int, busy: bool, seconds: float) -> None:
    os.sched_setaffinity(0, {cpu})
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not busy:
            os.sched_yield()


def pressure_s(resource: str) -> float:
    """Seconds some task waited for `resource` (cpu, memory, io), from the kernel's pressure counters."""
    line = Path(f"/proc/pressure/{resource}").read_text().splitlines()[0]
    return int(line.rsplit("total=", 1)[1]) / 1e6


def steal_s() -> float:
    """Seconds the hypervisor ran something else on this machine's virtual CPUs (all of them together)."""
    return int(Path("/proc/stat").read_text().split()[8]) / os.sysconf("SC_CLK_TCK")


def waits() -> dict:
    return {"cpu_pressure": pressure_s("cpu"), "memory_pressure": pressure_s("memory"), "io_pressure": pressure_s("io"),
            "steal": steal_s()}


def grown(before: dict) -> dict:
    return {f"{name}_grew_s": round(value - before[name], 1) for name, value in waits().items()}


def stream_gaps(model: str, nice: int, watchers: list) -> dict:
    """Start a real `vllm serve`, then the watchers, then stream one completion: its longest gap between pieces."""
    import httpx
    from harness.vllm_server import VllmServer

    server = VllmServer(model, Path(tempfile.mkdtemp()) / "vllm.log")
    if nice:
        server.command = ["nice", "-n", str(nice), *server.command]
    server.start()  # its start is not what is measured
    try:
        for process in watchers:
            process.start()
        before, began = waits(), time.monotonic()
        longest, pieces, last = 0.0, 0, began
        with httpx.stream("POST", f"{server.url}/completions", timeout=300, json={
                "model": model, "prompt": "Hello", "max_tokens": 8000, "ignore_eos": True, "stream": True}) as reply:
            for _ in reply.iter_lines():
                now = time.monotonic()
                longest, last, pieces = max(longest, now - last), now, pieces + 1
        return {"load": f"vllm serve, nice {nice}", "pieces": pieces, "reply_s": round(last - began, 1),
                "longest_gap_s": round(longest, 2), **grown(before)}
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(ROOT / "models" / "tiny-ernie"))
    parser.add_argument("--nice", type=int, default=0, help="run the server at this niceness")
    parser.add_argument("--spinners", action="store_true", help="no server: two spinning processes instead")
    args = parser.parse_args()

    results = multiprocessing.Queue()
    watchers = [multiprocessing.Process(target=watch, args=(cpu, results, SECONDS)) for cpu in (0, 1, None)]
    if args.spinners:
        before = waits()
        load = [multiprocessing.Process(target=spin, args=(cpu, busy, SECONDS))
                for cpu, busy in ((0, False), (1, True))]
        for process in load + watchers:
            process.start()
        for process in load:
            process.join()
        seen = {"load": "sched_yield on core 0, busy loop on core 1",
                **grown(before)}
    else:
        seen = stream_gaps(args.model, args.nice, watchers)
    for process in watchers:
        process.join()
    worst = dict(sorted(("free" if cpu is None else f"core {cpu}", s) for cpu, s in (results.get() for _ in watchers)))
    print(json.dumps({**seen, "watchers_longest_extra_sleep_s": worst,
                      "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
                      "omp_threads_bind": os.environ.get("VLLM_CPU_OMP_THREADS_BIND")}))


if __name__ == "__main__":
    main()
