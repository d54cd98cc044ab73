"""A bounded soak: several users chat, stop, edit settings and reconnect for a fixed time.

    python scripts/soak.py --minutes 5 --sessions 8                 # starts a server with the tiny model
    python scripts/soak.py --url http://127.0.0.1:7860 --minutes 30 # against a running app

Prints one JSON summary: replies, stops, errors, tokens/s, p95 time to first token,
connections the server refused (counted, not fatal), and (for a server it started) the memory of the Chainlit
process and of the whole server, every minute. Exits 1 if a reply was lost (no answer within the timeout) or an
unexpected error was shown.
"""

import argparse
import asyncio
import json
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: the repository root holds the harness

from harness.chat_client import ChatClient  # noqa: E402
from harness.server import ChainlitServer  # noqa: E402

STATS = re.compile(r"first token (\d+) ms.*?(\d+) prompt \+ (\d+) reply tokens")


class Tally:
    def __init__(self):
        self.replies = self.stops = self.tokens = self.lost = self.refused = 0
        self.ttfts: list[int] = []
        self.errors: list[str] = []


async def user(url: str, deadline: float, tally: Tally, rng: random.Random) -> None:
    while time.monotonic() < deadline:
        try:
            chat = await ChatClient(url).connect()
        except Exception as error:  # counted: a soak reports a refused connection, it does not die of it
            tally.refused += 1
            tally.errors.append(f"connection refused: {error!r}"[:200])
            await asyncio.sleep(1)
            continue
        try:
            for _ in range(rng.randint(2, 6)):  # one conversation, then a new chat
                if time.monotonic() > deadline:
                    break
                await one_turn(chat, tally, rng)
        finally:
            await chat.close()


async def one_turn(chat: ChatClient, tally: Tally, rng: random.Random) -> None:
    roll = rng.random()
    if roll < 0.15:
        await chat.change_settings({"temperature": rng.choice([0, 0.7, 1.2, 9]),
                                    "max_tokens": rng.choice([16, 64, 256])})
        return
    text = " ".join(rng.choice(["hello", "memory", "你好", "GPU", "🙂", "code"]) for _ in range(rng.randint(1, 300)))
    before = set(chat.messages)
    await chat.send(text)
    try:
        if roll < 0.3:
            await asyncio.sleep(rng.uniform(0.05, 0.5))
            await chat.stop()
            tally.stops += 1
        await chat.wait_idle(180)
    except asyncio.TimeoutError:
        tally.lost += 1
        return
    for message in (m for m in chat.messages.values() if m.id not in before and m.type == "assistant_message"):
        if match := STATS.search(message.content):
            tally.replies += 1
            tally.ttfts.append(int(match.group(1)))
            tally.tokens += int(match.group(3))
        elif "unexpectedly" in message.content or "Error" in message.author:
            tally.errors.append(message.content[:200])


def memory_mib(server: ChainlitServer | None) -> tuple[float, float] | None:
    """(the Chainlit process, the whole server with its engine processes) resident memory in MiB."""
    if server is None:
        return None
    root = psutil.Process(server.proc.pid)
    app = root.memory_info().rss / 2**20
    return round(app), round(app + sum(p.memory_info().rss for p in root.children(recursive=True)) / 2**20)


async def sample_memory(server, trace: list, every_s: float = 60) -> None:
    while True:
        await asyncio.sleep(every_s)
        trace.append(memory_mib(server))


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url")
    parser.add_argument("--model", default=str(ROOT / "models" / "tiny-ernie"))
    parser.add_argument("--preset", default="cpu")
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--minutes", type=float, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    server = None
    if not args.url:
        env = {"CHAT_MODEL": args.model, "CHAT_PRESET": args.preset,
               "CHAT_HISTORY_DB": str(Path(tempfile.mkdtemp(prefix="soak-")) / "chats.db")}
        server = ChainlitServer(env, Path("soak-server.log")).start()
        warm = await ChatClient(server.url).connect()
        await warm.ask("start", timeout=600)
        await warm.close()
    url = args.url or server.url
    tally, rng, began = Tally(), random.Random(args.seed), time.monotonic()
    memory_trace = [memory_mib(server)]
    sampler = asyncio.create_task(sample_memory(server, memory_trace)) if server else None
    try:
        await asyncio.gather(*(user(url, began + args.minutes * 60, tally, random.Random(rng.random()))
                               for _ in range(args.sessions)))
        memory_trace.append(memory_mib(server))
    finally:
        if sampler:
            sampler.cancel()
        if server:
            server.stop()
    wall = time.monotonic() - began
    summary = {"sessions": args.sessions, "minutes": round(wall / 60, 2), "replies": tally.replies,
               "stops": tally.stops, "lost": tally.lost, "unexpected_errors": tally.errors[:5],
               "tokens_per_s": round(tally.tokens / wall, 1),
               "ttft_p95_ms": statistics.quantiles(tally.ttfts, n=20)[-1] if len(tally.ttfts) > 1 else None,
               "refused_connections": tally.refused,
               "memory_mib_app_and_total_each_minute": memory_trace}
    print(json.dumps(summary, indent=1))
    return 1 if tally.lost or tally.errors else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
