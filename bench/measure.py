"""Measure one configuration in this process and print one JSON line per result.

    python -m bench.measure '{"kind": "ours", "preset": "4gb", "model": "models/ernie-0.3b-random"}'

kinds: `ours` (our engine layer with a preset), `raw` (vLLM's AsyncLLM with the
same arguments as that preset), `default` (AsyncLLM with the articles' default:
0.9 memory utilization, 16 sequences), `hf` (transformers `generate()`), `app`
(the real Chainlit server, one socket.io client per chat: the whole app path), `api`
(the same server's OpenAI-compatible API, the `openai` client, streamed), and the
peers `serve` (a plain `vllm serve`) and `llama` (llama.cpp's `llama-server`).
Each configuration runs in its own process so memory and start-up are its own; a
server's memory is its process tree's, and its start runs from its launch.
Every request uses ignore_eos, so it generates exactly max_tokens. vLLM configurations
sample like the app (temperature 0.8, top p 0.8) unless the config sets "temperature".
"""

import asyncio
import json
import statistics
import sys
import time

from bench import backends
from bench.memory import MemoryWatch

SHORT, LONG = 32, 1500  # prompt sizes in tokens
DECODE_TOKENS = 256
CONCURRENCY = (1, 8, 32)
SERVERS = ("app", "api", "serve", "llama")  # measured as a process of their own, from its launch


def emit(config: dict, metric: str, value, **extra) -> None:
    print(json.dumps({"config": config["name"], "metric": metric, "value": value, **extra}), flush=True)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def ttft_series(backend, config, label: str, size: int, rounds: int) -> None:
    results = [await backend.run(backend.prompt(size, seed=1000 + i), 1) for i in range(rounds)]
    ttfts = [r.ttft_s for r in results]
    emit(config, f"ttft_{label}_p50_ms", statistics.median(ttfts) * 1000)
    emit(config, f"ttft_{label}_p95_ms", pct(ttfts, 0.95) * 1000)


async def concurrency(backend, config, users: int, max_tokens: int = 128, size: int = 100, rounds: int = 3) -> None:
    """`users` requests at once, `rounds` times: the median rate (a round lasts well under a second)."""
    prompts = [backend.prompt(size, seed=5000 + users * 100 + i) for i in range(users)]
    await backend.run_many(prompts, 8)  # warm this batch shape first
    rates, ttfts = [], []
    for _ in range(rounds):
        results = await backend.run_many(prompts, max_tokens)
        wall = max(r.ended for r in results) - min(r.began for r in results)  # first request sent to last done
        rates.append(sum(r.tokens for r in results) / wall)
        ttfts += [r.ttft_s for r in results]
    emit(config, f"tok_s_at_{users}", statistics.median(rates))
    emit(config, f"ttft_at_{users}_p95_ms", pct(ttfts, 0.95) * 1000)


async def prefix_cache(backend, config) -> None:
    system = backend.prompt(LONG, seed=77)
    first = await backend.run(system + backend.prompt(8, seed=78), 1)
    second = await backend.run(system + backend.prompt(8, seed=79), 1)
    emit(config, "prefix_first_ttft_ms", first.ttft_s * 1000)
    emit(config, "prefix_second_ttft_ms", second.ttft_s * 1000, cached_tokens=second.cached)


async def long_chats(backend, config, users: int = 16) -> None:
    """16 concurrent ~2k-token chats: what the memory budget must hold."""
    results = await backend.run_many([backend.prompt(1800, seed=9000 + i) for i in range(users)], 200)
    emit(config, "tok_s_16_long_chats", sum(r.tokens for r in results) / max(r.total_s for r in results))


async def overhead(backend, config, rounds: int = 6) -> None:
    """Our engine layer against raw AsyncLLM on the same running engine, alternated to cancel out drift."""
    raw, ratios = backend.raw(), []
    for i in range(rounds):
        prompt = backend.prompt(SHORT, seed=700 + i)
        ours = (await backend.run(prompt, DECODE_TOKENS)).decode_tok_s
        ratios.append((await raw.run(prompt, DECODE_TOKENS)).decode_tok_s / ours)
    emit(config, "engine_layer_overhead_pct", (statistics.median(ratios) - 1) * 100)


async def measure(config: dict) -> None:
    """The whole set; `"suite": "peers"` keeps what the peers are compared on: start, 1, 8 and 32 chats, memory."""
    full, server = config.get("suite") != "peers", config["kind"] in SERVERS
    if not server:
        began = time.perf_counter()
        import vllm  # noqa: F401  (the app imports it while the server starts, before the first chat)

        emit(config, "import_s", time.perf_counter() - began)
    prepared = await asyncio.to_thread(backends.prepare, config)
    watch = MemoryWatch(children_only=server).start()
    began = time.perf_counter()
    backend = await backends.create(config, prepared)
    start_s = time.perf_counter() - began
    first = await backend.run(backend.prompt(SHORT, seed=1), 16)
    emit(config, "start_s", start_s)
    emit(config, "start_to_first_token_s", start_s + first.ttft_s)
    emit(config, "first_message_ttft_ms", first.ttft_s * 1000)
    if full:
        await latencies(backend, config)
    for users in config.get("concurrency", CONCURRENCY):
        await concurrency(backend, config, users)
    if full and config["kind"] != "hf":
        await prefix_cache(backend, config)
        await long_chats(backend, config)
    if full and config["kind"] == "ours":
        await overhead(backend, config)
    emit(config, "peak_memory_gib", watch.peak_gib())
    if config.get("switch_to"):
        began = time.perf_counter()
        await backend.switch(config["switch_to"])
        emit(config, "switch_s", time.perf_counter() - began, to=config["switch_to"])
        emit(config, "after_switch_memory_gib", watch.used_gib())
    await backend.close()
    emit(config, "left_after_shutdown_mib", watch.left_after_close_mib())
    watch.stop()


async def latencies(backend, config) -> None:
    warm = [await backend.run(backend.prompt(SHORT, seed=2 + i), 16) for i in range(5)]
    emit(config, "warm_ttft_ms", statistics.median(r.ttft_s for r in warm) * 1000)
    await ttft_series(backend, config, "short", SHORT, 20)
    await ttft_series(backend, config, "long", LONG, 10)
    if config["kind"] != "app":  # the app batches tokens every 40 ms: its 1-stream rate is tok_s_at_1
        decode = [await backend.run(backend.prompt(SHORT, seed=300 + i), DECODE_TOKENS) for i in range(3)]
        emit(config, "decode_tok_s", statistics.median(r.decode_tok_s for r in decode))


def main() -> None:
    config = json.loads(sys.argv[1])
    config.setdefault("name", f"{config['kind']}:{config.get('preset', '')}".rstrip(":"))
    asyncio.run(measure(config))


if __name__ == "__main__":
    main()
