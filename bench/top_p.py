"""Top p by engine/top_p.py beside vLLM's own (its sort of the vocabulary), alternated on one running engine.

    python -m bench.top_p --model models/ernie-0.3b-random               # random weights: flat logits
    python -m bench.top_p --model models/ernie-0.3b-random --sharpen 6   # the same, logits 6x as wide

The engine layer with one preset (`cpu` by default) serves requests of 100 prompt tokens and 128 reply tokens at
T 0.8 / top p 0.8, 1 at a time and 8 at once; every round runs both samplers, one after the other, so that other
work on the machine weighs on both alike. One JSON line per measurement, then the medians and their ratio.

Random weights give every token nearly the same logit: top p 0.8 keeps about half the vocabulary, so the
processor falls back to the sort at every step (its worst case). `--sharpen N` measures a copy whose final norm
is N times as large, so the logits spread N times as wide; at 6 the best token holds 0.39 and 13 tokens hold 0.8,
as a trained model's usually do (the best 64 hold p: the processor's usual case).
"""

import argparse
import asyncio
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from bench.backends import Ours

SAMPLERS = ("vLLM's top p", "engine/top_p.py")


def sharpened(model: Path, factor: float) -> Path:
    """A copy of `model` with its final norm `factor` times as large (written once, beside the system's temp)."""
    import torch
    from safetensors.torch import load_file, save_file

    copy = Path(tempfile.gettempdir()) / f"{model.name}-sharpened-{factor:g}"
    if not (copy / "model.safetensors").exists():
        shutil.copytree(model, copy, dirs_exist_ok=True)
        weights = load_file(model / "model.safetensors")
        weights["model.norm.weight"] = (weights["model.norm.weight"].float() * factor).to(torch.bfloat16)
        save_file(weights, copy / "model.safetensors", metadata={"format": "pt"})
    return copy


async def rate(backend: Ours, users: int, seed: int) -> float:
    prompts = [backend.prompt(100, seed=seed + i) for i in range(users)]
    results = await backend.run_many(prompts, 128)
    return sum(r.tokens for r in results) / (max(r.ended for r in results) - min(r.began for r in results))


async def measure(model: Path, preset: str, rounds: int) -> None:
    from engine import top_p
    from engine.engine import ChatEngine
    from engine.settings import load_settings

    engine = ChatEngine(load_settings(model=str(model), preset=preset))
    await engine.ensure_started()
    backend, processor = Ours(engine, 0.8, 0.8), top_p.serves
    rates = {(s, u): [] for s in SAMPLERS for u in (1, 8)}
    try:
        await backend.run_many([backend.prompt(100, seed=i) for i in range(8)], 8)  # each batch shape once
        for round_ in range(rounds):
            for sampler in SAMPLERS if round_ % 2 == 0 else reversed(SAMPLERS):
                top_p.serves = processor if sampler == SAMPLERS[1] else (lambda llm: False)
                for users in (1, 8):
                    value = await rate(backend, users, seed=1000 * round_ + 100 * users)
                    rates[sampler, users].append(value)
                    print(json.dumps({"sampler": sampler, "users": users, "round": round_, "tok_s": value}), flush=True)
    finally:
        top_p.serves = processor
        engine.shutdown()
    for users in (1, 8):
        before, after = (statistics.median(rates[s, users]) for s in SAMPLERS)
        print(f"{users} stream(s): vLLM's top p {before:.1f} tok/s, engine/top_p.py {after:.1f} tok/s, "
              f"{after / before:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--preset", default="cpu")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--sharpen", type=float, help="measure a copy with logits this many times as wide")
    args = parser.parse_args()
    model = sharpened(args.model, args.sharpen) if args.sharpen else args.model
    began = time.perf_counter()
    asyncio.run(measure(model, args.preset, args.rounds))
    print(f"{time.perf_counter() - began:.0f} s in all, model {model}")


if __name__ == "__main__":
    main()
