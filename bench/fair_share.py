"""The fair-share benchmark: one user floods the API while another chats, with and without shares, in one run.

    python -m bench.fair_share --model models/ernie-full --preset cpu

User A sends 4x the preset's slots of API requests at once (long replies) through the API gate (api/gate.py, the
real admission and vLLM's OpenAI app, in this process); user B chats through the engine layer, first alone, then
beside A's flood. "before" is the admission without shares or priorities (as CHAT_USER_SHARE=0: every request at
priority 0, which vLLM's priority queue serves in arrival order, as first come, first served), "after" the
default share and priorities. Both run on one engine, switched between phases, alternately (`--repeat` times):
on a machine shared with other work, what it does meanwhile then falls on both alike. Rows: B's time to first
token and tokens/s alone and beside the flood (their ratio), A's requests finished by B's first token, and the
engine's total rate while the flood ran (A's and B's tokens over the flood's wall time). Results:
bench/results/fair-share-<time>.json and -.png.
"""

import argparse
import asyncio
import json
import platform
import statistics
import time
from pathlib import Path

import httpx

from bench.run import RESULTS
from engine.settings import Sampling, load_settings

CHAT = [{"role": "user", "content": "Hello! Tell me about the weather today."}]
ROWS = [("b_alone_ttft_ms", "B alone: TTFT ms", "{:.0f}"), ("b_alone_tok_s", "B alone: tok/s", "{:.1f}"),
        ("b_flood_ttft_ms", "B beside A's flood: TTFT ms", "{:.0f}"),
        ("b_flood_tok_s", "B beside A's flood: tok/s", "{:.1f}"),
        ("ttft_ratio", "B's TTFT, flood / alone", "{:.2f}x"),
        ("a_done_at_b_first_token", "A's requests done at B's 1st token", "{:.0f}"),
        ("total_tok_s", "total tok/s during the flood", "{:.1f}"),
        ("flood_s", "flood wall s", "{:.0f}")]


async def b_chats(engine, rounds: int, tokens: int, going=lambda: True, done=lambda: 0) -> list[dict]:
    """B's chats one after another (at most `rounds`, while `going()`): TTFT, decode rate, A's done at 1st token."""
    out = []
    for _ in range(rounds):
        if not going():
            break
        began, first, a_done = time.monotonic(), None, None
        async for item in engine.stream(CHAT, Sampling(max_tokens=tokens, ignore_eos=True), user="b"):
            if first is None:
                first, a_done = time.monotonic(), done()
            stats = item
        out.append({"ttft_s": first - began, "tok_s": stats.decode_tokens_per_s, "tokens": stats.generated_tokens,
                    "a_done": a_done})
    return out


async def flood_beside(engine, gate, flood_tokens: int, chat_tokens: int) -> dict:
    from engine.admission import API
    from engine.openai_app import COMPLETIONS_PATH

    count = 4 * engine.preset.max_num_seqs
    body = {"model": engine.settings.model, "prompt": "Write a long story about a fox and a crow.",
            "max_tokens": flood_tokens, "ignore_eos": True}
    done, tokens = 0, 0
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=gate), base_url="http://bench",
                                 timeout=httpx.Timeout(3600)) as http:
        async def one() -> None:
            nonlocal done, tokens
            response = await http.post(COMPLETIONS_PATH, json=body)
            response.raise_for_status()
            done, tokens = done + 1, tokens + response.json()["usage"]["completion_tokens"]

        began = time.monotonic()
        flood = [asyncio.create_task(one()) for _ in range(count)]
        while not (engine.admission.held(API) and engine.status().requests_running + engine.status().requests_waiting
                   >= engine.admission.held(API)):  # A's flood reached vLLM's scheduler
            await asyncio.sleep(0.1)
        chats = await b_chats(engine, 3, chat_tokens, lambda: done < count, lambda: done)
        await asyncio.gather(*flood)
        wall = time.monotonic() - began
    return {"chats": chats, "a_requests": count, "a_tokens": tokens, "flood_s": wall,
            "total_tok_s": (tokens + sum(c["tokens"] for c in chats)) / wall}


async def measure_all(args) -> dict[str, dict]:
    from engine.engine import ChatEngine

    engine = ChatEngine(load_settings(model=args.model, preset=args.preset, idle_minutes=0))
    began = time.monotonic()
    await engine.ensure_started()
    print(f"engine ready in {time.monotonic() - began:.0f} s", flush=True)
    try:
        # warm: the first rounds at each batch size set up the CPU's kernels
        await asyncio.gather(*(b_chats(engine, 1, 8) for _ in range(engine.preset.max_num_seqs)))
        await b_chats(engine, 2, 8)
        return {mode + (f" #{n + 1}" if n else ""): await measure(engine, mode, args)
                for n in range(args.repeat) for mode in args.modes.split(",")}
    finally:
        engine.shutdown()


def switch(engine, mode: str) -> None:
    """The admission as it was before shares ("before") or as it is ("after"), on the running engine."""
    settings = engine.settings.model_copy(update={"user_share": 0 if mode == "before" else None})
    engine.admission.set_rules(lambda: settings.share(engine.preset.max_num_seqs), settings.fair_share)


async def measure(engine, mode: str, args) -> dict:
    from api.gate import ApiGate

    switch(engine, mode)
    alone = await b_chats(engine, args.rounds, args.chat_tokens)
    print(f"[{mode}] share {engine.admission.share}; B alone: {alone}", flush=True)
    flood = await flood_beside(engine, ApiGate(engine), args.flood_tokens, args.chat_tokens)
    print(f"[{mode}] beside the flood: {flood}", flush=True)
    settings = engine.settings.model_copy(update={"user_share": 0 if mode == "before" else None})
    # B's chats whose first token came while A still ran; where none did, B waited for the whole flood (a fast
    # GPU ends A's flood before B's turn without shares): those chats are the result, A done at B's first token
    beside = [c for c in flood["chats"] if c["a_done"] < flood["a_requests"]] or flood["chats"]
    row = {"share": settings.share(engine.preset.max_num_seqs), "slots": engine.preset.max_num_seqs,
           "b_alone_ttft_ms": 1000 * statistics.median(c["ttft_s"] for c in alone),
           "b_alone_tok_s": statistics.median(c["tok_s"] for c in alone),
           "b_flood_ttft_ms": 1000 * statistics.median(c["ttft_s"] for c in beside),
           "b_flood_tok_s": statistics.median(c["tok_s"] for c in beside),
           "a_done_at_b_first_token": beside[0]["a_done"], "total_tok_s": flood["total_tok_s"],
           "flood_s": flood["flood_s"], "raw": {"alone": alone, "flood": flood}}
    row["ttft_ratio"] = row["b_flood_ttft_ms"] / row["b_alone_ttft_ms"]
    return row


def table(rows: dict[str, dict]) -> str:
    lines = ["| | " + " | ".join(rows) + " |", "|---" * (len(rows) + 1) + "|"]
    for key, label, fmt in ROWS:
        lines.append(f"| {label} | " + " | ".join(fmt.format(r[key]) for r in rows.values()) + " |")
    for name in rows:
        if name.startswith("after") and name.replace("after", "before") in rows:
            ratio = rows[name]["total_tok_s"] / rows[name.replace("after", "before")]["total_tok_s"]
            lines.append(f"| total rate, {name} / {name.replace('after', 'before')} | {ratio:.0%} |")
    return "\n".join(lines)


def plot(rows: dict[str, dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    modes = list(rows)
    for offset, (key, label) in enumerate([("b_alone_ttft_ms", "B alone"), ("b_flood_ttft_ms", "B beside A's flood")]):
        left.bar([n + offset * 0.4 for n in range(len(modes))], [rows[m][key] for m in modes], 0.4, label=label)
    left.set(xticks=[n + 0.2 for n in range(len(modes))], xticklabels=modes, ylabel="B's time to first token, ms",
             yscale="log", title="B's first token")
    left.legend(fontsize=8)
    right.bar(modes, [rows[m]["total_tok_s"] for m in modes], color="#4c72b0")
    right.set(ylabel="tokens/s, A and B together", title="Engine's total rate during the flood")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="models/ernie-full")
    parser.add_argument("--preset", default="cpu")
    parser.add_argument("--flood-tokens", type=int, default=128, help="each of A's replies")
    parser.add_argument("--chat-tokens", type=int, default=32, help="each of B's replies")
    parser.add_argument("--rounds", type=int, default=3, help="B's chats alone")
    parser.add_argument("--modes", default="before,after")
    parser.add_argument("--repeat", type=int, default=1, help="run the modes alternately this many times")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    rows = asyncio.run(measure_all(args))
    text = table(rows)
    print(text)
    stem = args.out / f"fair-share-{args.preset}-{time.strftime('%Y%m%d-%H%M%S')}"
    report = {"command": "python -m bench.fair_share " + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in
                                                                    vars(args).items() if k != "out"),
              "processor": _processor(), "rows": rows, "table": text}
    Path(f"{stem}.json").write_text(json.dumps(report, indent=1, default=str))
    try:  # the GPU lock (what the GPU machine runs) has no matplotlib: the JSON is the result, the plot a view of it
        plot(rows, Path(f"{stem}.png"))
    except ModuleNotFoundError as error:
        print(f"wrote {stem}.json; no plot ({error}: install matplotlib to draw one)")
    else:
        print(f"wrote {stem}.json and .png")


def _processor() -> str:
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    name = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")),
                platform.processor())
    isa = "AVX-512" if "avx512f" in info else "AVX2" if "avx2" in info else "no AVX2"
    return f"{name}, {isa}"


if __name__ == "__main__":
    main()
