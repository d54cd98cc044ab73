"""The idle engine's sleep and wake (engine/idle.py), measured: memory, wake time, speed, cycles, memory taken.

For each preset, in a process of its own, the app's engine layer starts and then:
- one stream (3 x 256 tokens, T 0.8 / top p 0.8) before it sleeps;
- `fall_asleep()`, as the idle timer calls it: its time, and the whole device's memory asleep (NVML, minus what was
  in use before the start; on the CPU the engine's processes, which are gone);
- a message to the sleeping engine: the time from the message to its first token (the wake included), the memory
  awake again, and one stream again;
- `--cycles` more rounds of sleep and a chat: memory asleep and awake after the first and the last;
- with `--take`, once more asleep while another process takes all but 0.3 GiB of the free memory: what the wake
  says, and that the next message after the memory came back is answered.

    python -m bench.idle --model models/ernie-0.3b-random --presets 4gb,8gb --cycles 20 --take
    python -m bench.idle --model models/full-ernie --presets cpu --cycles 3

Prints one JSON line per preset and writes them to bench/results/idle-<time>.jsonl.
"""

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
GIB = 1 << 30
TAKE_LEAVES_GIB = 0.3


async def stream_once(engine, tokens: int = 256) -> tuple[float, float]:
    """One reply: seconds to its first token, and its decode tokens per second."""
    from engine.reports import Stats
    from engine.settings import Sampling

    began, first, stats = time.perf_counter(), None, None
    async for item in engine.stream([{"role": "user", "content": "Tell me a story."}],
                                    Sampling(temperature=0.8, top_p=0.8, max_tokens=tokens, ignore_eos=True)):
        if isinstance(item, Stats):
            stats = item
        elif first is None:
            first = time.perf_counter()
    return (first or time.perf_counter()) - began, stats.decode_tokens_per_s or 0.0


async def measure(preset: str, model: str, cycles: int, take: bool) -> dict:
    from bench.memory import MemoryWatch
    from engine import hardware
    from engine.engine import ChatEngine
    from engine.errors import ChatError
    from engine.settings import load_settings

    watch = MemoryWatch()
    engine = ChatEngine(load_settings(model=model, preset=preset, idle_minutes=1440))  # asleep when told to

    def held() -> float:
        if watch.gpu:
            return round(watch.used_gib(), 3)
        return round(hardware.memory_bytes(list(engine.host.pids if engine.host else [])) / GIB, 3)

    began = time.perf_counter()
    await engine.ensure_started()
    record = {"preset": preset, "device": engine.status().device, "start_s": round(time.perf_counter() - began, 1)}
    await stream_once(engine)
    record["tok_s_before"] = round(sum([(await stream_once(engine))[1] for _ in range(3)]) / 3, 1)
    record["awake_gib"] = held()
    cycle_records = []
    for cycle in range(1 + cycles):
        t0 = time.perf_counter()
        assert await engine.fall_asleep(), "the engine refused to sleep"
        asleep_s, asleep_gib = time.perf_counter() - t0, held()
        ttft, _ = await stream_once(engine)
        cycle_records.append({"sleep_s": round(asleep_s, 2), "asleep_gib": asleep_gib,
                              "message_to_first_token_s": round(ttft, 3), "awake_gib": held()})
    record["tok_s_after"] = round(sum([(await stream_once(engine))[1] for _ in range(3)]) / 3, 1)
    record["first_cycle"], record["last_cycle"] = cycle_records[0], cycle_records[-1]
    wakes = sorted(c["message_to_first_token_s"] for c in cycle_records)
    record["wake_ttft_median_s"], record["wake_ttft_max_s"] = wakes[len(wakes) // 2], wakes[-1]
    if take and watch.gpu:
        record["taken"] = await memory_taken(engine, ChatError)
    engine.shutdown()
    record["left_after_shutdown_mib"] = round(watch.left_after_close_mib(), 1)
    return record


async def memory_taken(engine, ChatError) -> dict:
    """Asleep, another program takes the freed memory: what the next message is told; then it is given back."""
    assert await engine.fall_asleep()
    holder = subprocess.Popen([sys.executable, "-m", "bench.cards", "--hold", str(TAKE_LEAVES_GIB)], cwd=ROOT,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    said = {"holder": holder.stdout.readline().strip()}
    try:
        await stream_once(engine, 16)
        said["told"] = "answered (the wake fit)"
    except ChatError as error:
        said["told"] = str(error)
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    try:
        ttft, _ = await stream_once(engine, 16)
        said["next_message_answered_after_s"] = round(ttft, 2)
    except ChatError as error:
        said["next_message_error"] = str(error)
    return said


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--presets", default="4gb,8gb")
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--take", action="store_true", help="also take the memory while the engine sleeps")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # run one preset in this process
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    if args.one:
        print(json.dumps(asyncio.run(measure(args.one, args.model, args.cycles, args.take))), flush=True)
        return
    out = Path(args.out) / f"idle-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    for preset in args.presets.split(","):
        command = [sys.executable, "-m", "bench.idle", "--one", preset, "--model", args.model,
                   "--cycles", str(args.cycles), *(["--take"] if args.take else [])]
        proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        line = lines[-1] if lines else json.dumps({"preset": preset, "error": proc.stderr.splitlines()[-5:]})
        print(line, flush=True)
        with open(out, "a") as results:
            results.write(line + "\n")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
