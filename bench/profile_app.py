"""Where the chat server's time goes under load: py-spy samples the `chainlit run` process while N chats stream.

    python -m bench.profile_app --model models/ernie-0.3b-random --preset 4gb --chats 32 --seconds 20
    python -m bench.profile_app --model M --engine-url http://127.0.0.1:8000/v1   # the app in remote mode

Prints the functions that hold the server's main thread most (own time, and time including callees,
grouped by library), and writes the raw samples and a JSON summary next to the benchmark results.
Needs `py-spy` on the PATH (`pip install py-spy`); the engine core, a process of its own, is not sampled.
"""

import argparse
import asyncio
import collections
import json
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIBRARIES = ("chainlit", "socketio", "engineio", "uvicorn", "websockets", "wsproto", "h11", "starlette",
             "vllm", "transformers", "tokenizers", "asyncio", "uvloop", "app.py", "engine/", "ui/", "web/", "api/",
             "history/")


def library_of(frame: str) -> str:
    return next((name for name in LIBRARIES if name in frame), "other")


def summarize(raw: Path, top: int = 20) -> dict:
    """Collapsed stacks (`frame;frame;... count`, outermost first) -> own and inclusive time by function."""
    own, inclusive, by_library = collections.Counter(), collections.Counter(), collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames, count = stack.split(";"), int(count)
        total += count
        own[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count
        by_library[library_of(frames[-1])] += count

    def share(counter):
        return [(name, round(100 * n / max(total, 1), 1)) for name, n in counter.most_common(top)]

    return {"samples": total, "own_pct": share(own), "inclusive_pct": share(inclusive),
            "own_by_library_pct": share(by_library)}


async def load(url: str, chats: int, seconds: float, max_tokens: int) -> dict:
    """Keep `chats` chats asking, one message after another, for `seconds`; count what arrives."""
    from harness.chat_client import ChatClient

    clients = [await ChatClient(url).connect() for _ in range(chats)]
    await asyncio.gather(*(c.change_settings({"max_tokens": max_tokens}) for c in clients))
    stop_at, replies = time.monotonic() + seconds, 0

    async def chat(client, index: int) -> None:
        nonlocal replies
        turn = 0
        while time.monotonic() < stop_at:
            await client.ask(f"chat {index} turn {turn}: tell me something")
            turn, replies = turn + 1, replies + 1

    began = time.monotonic()
    await asyncio.gather(*(chat(c, i) for i, c in enumerate(clients)))
    await asyncio.gather(*(c.close() for c in clients))
    return {"replies": replies, "seconds": time.monotonic() - began}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--preset", default="4gb")
    parser.add_argument("--chats", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--engine-url", help="a running `vllm serve` of the model: the app as its client")
    parser.add_argument("--label", default="app")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = parser.parse_args()

    import psutil
    from harness.server import ChainlitServer

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = {"CHAT_MODEL": args.model, "CHAT_PRESET": args.preset}
    if args.engine_url:
        env = {"CHAT_ENGINE_URL": args.engine_url}
    server = ChainlitServer(env, Path(tempfile.mkdtemp()) / "chainlit.log").start()
    try:
        await load(server.url, args.chats, 8, args.max_tokens)  # start the engine, warm every batch shape
        raw = out / f"profile-{args.label}.txt"
        spy = subprocess.Popen(["py-spy", "record", "--pid", str(server.proc.pid), "--duration", str(int(args.seconds)),
                                "--rate", "200", "--format", "raw", "--output", str(raw), "--nonblocking"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        cpu_before = psutil.Process(server.proc.pid).cpu_times()
        served = await load(server.url, args.chats, args.seconds, args.max_tokens)
        cpu_after = psutil.Process(server.proc.pid).cpu_times()
        spy.wait(timeout=args.seconds + 60)
        cpu_s = (cpu_after.user + cpu_after.system) - (cpu_before.user + cpu_before.system)
        summary = {"label": args.label, "chats": args.chats, **served, "server_cpu_s": round(cpu_s, 2),
                   "server_cpu_ms_per_reply": round(1000 * cpu_s / max(served["replies"], 1), 1), **summarize(raw)}
    finally:
        server.stop()
    (out / f"profile-{args.label}.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps({k: summary[k] for k in ("label", "chats", "replies", "seconds", "server_cpu_s",
                                              "server_cpu_ms_per_reply", "samples")}))
    for key in ("own_by_library_pct", "own_pct", "inclusive_pct"):
        print(f"-- {key}")
        for name, pct in summary[key]:
            print(f"{pct:5.1f}%  {name}")


if __name__ == "__main__":
    asyncio.run(main())
