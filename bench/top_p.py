"""Top p by engine/top_p.py beside vLLM's own (its sort of the vocabulary), alternated on one running engine.

    python -m bench.top_p --model models/ernie-0.3b-random               # random weights: flat logits
    python -m bench.top_p --model models/ernie-0.3b-random --sharpen 6   # the same, logits 6x as wide
    python -m bench.top_p --calls                                         # one call of each, on this device

The engine layer with one preset (`cpu` by default) serves requests of 16 prompt tokens and 48 reply tokens at
T 0.8 / top p 0.8, 1 at a time and 8 at once; every round runs both samplers, one after the other, so that other
work on the machine weighs on both alike. Each slice gives tokens/s and the engine processes' CPU time per token
(the steadier of the two where other work shares the cores). One JSON line per slice, then the medians and
their ratios.

Random weights give every token nearly the same logit: top p 0.8 keeps about half the vocabulary, so the
processor falls back to the sort at every step (its worst case). `--sharpen N` measures a copy whose final norm
is N times as large, so the logits spread N times as wide; at 6 the best token holds 0.39 and 13 tokens hold 0.8,
as a trained model's usually do (the best 64 hold p: the processor's usual case). `--calls` times one call of
the processor's mask and of the sort alone, on the GPU where there is one (torch only).
"""

import argparse
import asyncio
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

SAMPLERS = ("vLLM's top p", "engine/top_p.py")
PROMPT, REPLY = 16, 48  # tokens: a prompt within one KV block (no prefix cache hit), mostly decode


def sharpened(model: Path, factor: float) -> Path:
    """A copy of `model` with its final norm `factor` times as large (written once, beside the system's temp)."""
    import torch
    from safetensors.torch import load_file, save_file

    copy = Path(tempfile.gettempdir()) / f"{model.name}-sharpened-{factor:g}"
    if not copy.is_dir():  # written beside it, then renamed: a copy cut short is never taken for one
        partial = copy.with_name(copy.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(model, partial)
        weights = load_file(model / "model.safetensors")
        weights["model.norm.weight"] = (weights["model.norm.weight"].float() * factor).to(torch.bfloat16)
        save_file(weights, partial / "model.safetensors", metadata={"format": "pt"})
        partial.rename(copy)
    return copy


def core_cpu_s(engine) -> float:
    """CPU seconds the engine's processes have used: on a machine shared with other work, the cost of a token
    shows here when the wall clock also counts the waits for a core."""
    import psutil

    return sum(sum(psutil.Process(pid).cpu_times()[:2]) for pid in engine._engine_pids)


async def slice_(backend, engine, users: int, seed: int) -> dict:
    prompts = [backend.prompt(PROMPT, seed=seed + i) for i in range(users)]
    cpu = core_cpu_s(engine)
    results = await backend.run_many(prompts, REPLY)
    tokens = sum(r.tokens for r in results)
    return {"tok_s": tokens / (max(r.ended for r in results) - min(r.began for r in results)),
            "core_cpu_ms_per_token": (core_cpu_s(engine) - cpu) * 1000 / tokens}


async def measure(model: Path, preset: str, rounds: int) -> None:
    from bench.backends import Ours
    from engine import top_p
    from engine.engine import ChatEngine
    from engine.settings import load_settings

    engine = ChatEngine(load_settings(model=str(model), preset=preset))
    await engine.ensure_started()
    backend, processor = Ours(engine, 0.8, 0.8), top_p.serves
    seen = {(s, u): [] for s in SAMPLERS for u in (1, 8)}
    try:
        await backend.run_many([backend.prompt(PROMPT, seed=i) for i in range(8)], 8)  # each batch shape once
        for round_ in range(rounds):
            for sampler in SAMPLERS if round_ % 2 == 0 else reversed(SAMPLERS):
                top_p.serves = processor if sampler == SAMPLERS[1] else (lambda llm: False)
                for users in (1, 8):
                    seed = 10_000 * round_ + 1000 * SAMPLERS.index(sampler) + 100 * users  # no prefix shared
                    row = await slice_(backend, engine, users, seed)
                    seen[sampler, users].append(row)
                    print(json.dumps({"sampler": sampler, "users": users, "round": round_, **row}), flush=True)
    finally:
        top_p.serves = processor
        engine.shutdown()
    for users in (1, 8):
        for metric in ("tok_s", "core_cpu_ms_per_token"):
            before, after = (statistics.median(r[metric] for r in seen[s, users]) for s in SAMPLERS)
            print(f"{users} stream(s), {metric}: vLLM's top p {before:.1f}, engine/top_p.py {after:.1f}, "
                  f"{after / before:.2f}x")


def calls() -> None:
    """Milliseconds a call of `mask_top_p` and of the sort take on 1, 8 and 32 rows of 103,424 logits: flat ones
    (the sort's work), ones whose best 64 hold p, ones that need 64-1024 tokens."""
    import torch

    from engine.top_p import _by_sort, mask_top_p

    device = "cuda" if torch.cuda.is_available() else "cpu"
    repeats = 100 if device == "cuda" else 5
    if device == "cpu":
        torch.set_num_threads(1)  # as vLLM's CPU engine core computes here (docs/benchmarks.md, "Start-up")
    g = torch.Generator(device=device).manual_seed(0)

    def timed(call) -> float:
        call()
        if device == "cuda":
            torch.cuda.synchronize()
        began = time.perf_counter()
        for _ in range(repeats):
            call()
        if device == "cuda":
            torch.cuda.synchronize()
        return (time.perf_counter() - began) / repeats * 1000

    for rows in (1, 8, 32):
        peaked = torch.randn(rows, 103_424, device=device, generator=g) * 1.5
        peaked[:, :40] += 18 - 0.3 * torch.arange(40.0, device=device)
        cases = {"flat": torch.randn(rows, 103_424, device=device, generator=g) * 0.5, "best 64 hold p": peaked,
                 "64-1024 hold p": torch.randn(rows, 103_424, device=device, generator=g) * 3.6}
        for case, logits in cases.items():
            work, p = logits.clone(), torch.full((rows,), 0.8, device=device)
            sort_ms = timed(lambda: _by_sort(work.copy_(logits), p))
            ours_ms = timed(lambda: mask_top_p(work.copy_(logits), [0.8] * rows))
            print(json.dumps({"device": device, "rows": rows, "logits": case, "sort_ms": sort_ms, "ours_ms": ours_ms}),
                  flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path)
    parser.add_argument("--preset", default="cpu")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--sharpen", type=float, help="measure a copy with logits this many times as wide")
    parser.add_argument("--calls", action="store_true", help="time one call of each sampler instead")
    args = parser.parse_args()
    if args.calls:
        return calls()
    if args.model is None:
        parser.error("--model is required (or --calls)")
    model = sharpened(args.model, args.sharpen) if args.sharpen else args.model
    began = time.perf_counter()
    asyncio.run(measure(model, args.preset, args.rounds))
    print(f"{time.perf_counter() - began:.0f} s in all, model {model}")


if __name__ == "__main__":
    main()
