"""Ten preset switches in a row: after each, the device memory in use and the engine processes.

    python -m bench.switches --model models/ernie-0.3b-random [--presets 4gb,6gb] [--count 10]

Prints one JSON line per switch and a last line with what is left after shutdown
(NVML for the whole GPU, minus what was in use before the first start).
"""

import argparse
import asyncio
import json
import time

from bench.memory import MemoryWatch
from engine import hardware
from engine.engine import ChatEngine
from engine.settings import load_settings


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--presets", default="4gb,6gb")
    parser.add_argument("--count", type=int, default=10)
    args = parser.parse_args()
    names = args.presets.split(",")
    watch = MemoryWatch()
    engine = ChatEngine(load_settings(model=args.model, preset=names[0]))
    await engine.ensure_started()
    for i in range(args.count):
        name = names[(i + 1) % len(names)]
        began = time.perf_counter()
        await engine.switch_preset(name)
        print(json.dumps({"switch": i + 1, "to": name, "seconds": round(time.perf_counter() - began, 1),
                          "memory_gib": round(watch.used_gib(), 3), "footprint_gib": engine.status().needs_gib,
                          "engine_processes": len(hardware.child_pids())}), flush=True)
    engine.shutdown()
    print(json.dumps({"left_after_shutdown_mib": round(watch.left_after_close_mib(), 1),
                      "engine_processes": len(hardware.child_pids())}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
