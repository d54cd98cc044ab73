"""Does an engine process outlive its app? The chat server ended in each way, at each moment, counted.

For each way (SIGKILL, SIGTERM, Ctrl-C to the process group) and moment (during the engine's build, 1 s after its
core appeared; mid-reply; idle after a reply), `--tries` times: a real `chainlit run app.py` server, a chat that
opens (and so starts the engine), the end, and then how many processes the server started are still running
15 s later (harness/server.py finds them), how much GPU memory is still held (NVML, where there is a GPU), and
whether a new server starts on the same port.

    python -m bench.orphans --model models/tiny-ernie --preset-json '{...}' --tries 3
    python -m bench.orphans --model models/ernie-0.3b-random --preset 4gb --tries 2      # on a GPU

Prints a table and writes bench/results/orphans-<time>.json.
"""

import argparse
import asyncio
import json
import signal
import tempfile
import time
from pathlib import Path

import psutil

from engine import hardware
from harness.chat_client import ChatClient
from harness.server import ChainlitServer, describe, engine_processes, free_port

RESULTS = Path(__file__).resolve().parent / "results"
WAYS = {"SIGKILL": (signal.SIGKILL, False), "SIGTERM": (signal.SIGTERM, False), "Ctrl-C": (signal.SIGINT, True)}
MOMENTS = ("build", "streaming", "idle")
LEFT_WITHIN_S = 15


async def one_try(env: dict, way: str, moment: str, folder: Path) -> dict:
    port = free_port()
    baseline, began = hardware.gpu_used_bytes(), time.time()
    server = ChainlitServer(env, folder / f"{way}-{moment}.log", port=port).start(timeout=300)
    chat = await ChatClient(server.url).connect(wait_ready=False)
    try:
        if moment == "build":
            await asyncio.to_thread(server.engine_process)
            await asyncio.sleep(1.0)
        else:
            await chat.wait_opened(timeout=600)
            shown = {m.id for m in chat.replies()}
            await chat.send("Write a very long story.")
            if moment == "streaming":
                await chat.streaming_reply(shown, timeout=600)
            else:
                await chat.wait_idle(timeout=600)
    finally:
        await chat.close()
    signum, group = WAYS[way]
    server.kill(signum, group)
    left = await asyncio.to_thread(server.wait_left_behind, LEFT_WITHIN_S)
    held = None if baseline is None else max((hardware.gpu_used_bytes() or 0) - baseline, 0) / 2**30
    vllm_left = engine_processes(since=began - 1)  # also those whose environment and files say nothing of the server
    said = describe(left + [p for p in vllm_left if p.pid not in {q.pid for q in left}])
    server.end_left_behind()
    for proc in vllm_left:
        try:
            proc.kill()
        except psutil.Error:
            pass
    try:
        ChainlitServer(env, folder / f"{way}-{moment}-next.log", port=port).start(timeout=300).stop()
        restarted = True
    except (RuntimeError, TimeoutError):
        restarted = False
    return {"way": way, "moment": moment, "left": max(len(left), len(vllm_left)), "which": said,
            "gpu_held_gib": held, "restarted_on_port": restarted}


async def run(env: dict, tries: int, ways: list[str], moments: list[str]) -> list[dict]:
    records = []
    with tempfile.TemporaryDirectory() as folder:
        for moment in moments:
            for way in ways:
                for _ in range(tries):
                    record = await one_try(env, way, moment, Path(folder))
                    print(json.dumps(record), flush=True)
                    records.append(record)
    return records


def table(records: list[dict]) -> str:
    lines = ["| how and when the server ended | tries | engine left behind | new server on the port |",
             "|---|---|---|---|"]
    cells: dict[tuple[str, str], list[dict]] = {}
    for record in records:
        cells.setdefault((record["way"], record["moment"]), []).append(record)
    for (way, moment), rows in cells.items():
        lines.append(f"| {way}, {moment} | {len(rows)} | {sum(r['left'] > 0 for r in rows)} | "
                     f"{sum(r['restarted_on_port'] for r in rows)} of {len(rows)} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--preset", default="custom")
    parser.add_argument("--preset-json", help="CHAT_CUSTOM_PRESET, for --preset custom")
    parser.add_argument("--tries", type=int, default=3)
    parser.add_argument("--ways", default=",".join(WAYS))
    parser.add_argument("--moments", default=",".join(MOMENTS))
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    env = {"CHAT_MODEL": args.model, "CHAT_PRESET": args.preset, "CHAT_IDLE_MINUTES": "0"}
    if args.preset_json:
        env["CHAT_CUSTOM_PRESET"] = args.preset_json
    records = asyncio.run(run(env, args.tries, args.ways.split(","), args.moments.split(",")))
    print(table(records))
    out = Path(args.out) / f"orphans-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"device": hardware.gpu().name if hardware.gpu() else "CPU",
                               "records": records}, indent=1))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
