"""Small cards, simulated on a big GPU: does `auto` start the right preset, and does it serve?

For each level N (GiB free), another process holds all but N GiB of the GPU, as a
desktop and the rest of a small card would, and the app's engine layer starts
with `CHAT_PRESET=auto` in a fresh process. It then serves the preset's
`max_num_seqs` chats of about 1k tokens at once plus one prompt at the context
limit, while NVML samples the whole device. A level may name the preset instead
of `auto` (LEVEL:DTYPE:PRESET, e.g. `3.0::2gb-8bit`).

    python -m bench.cards --model models/ernie-0.3b-random
    python -m bench.cards --model models/ernie-0.3b-random --levels 3.0,7.3:float16,2.3::2gb-8bit

Writes bench/results/cards-<time>.json: a list of records with `free_gib`,
`preset`, `started`, `start_s`, `peak_gib`, `served`, `error` (and the footprint
`engine.sizing` predicted, the free memory left at the peak, the dtype, and the
start's stage timings from vLLM's log).
"""

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
# the second 3.0 is a warm start; 7.3:float16 proves float16; 1.8 is below every bf16 preset (auto runs 8 bits)
LEVELS = "1.8,2.3,3.0,3.3,5.0,5.3,7.0,7.3,3.0,7.3:float16,2.3::2gb-8bit,3.0::2gb-8bit"
GIB = 1 << 30
STAGE = re.compile(r"(took|finished in|takes|Loading weights|Model loading|init engine).*?(\d+\.\d+) ?s", re.I)


def hold(free_gib: float) -> None:
    """Keep all but `free_gib` of the GPU allocated until stdin closes (the simulated desktop)."""
    import torch

    free, _ = torch.cuda.mem_get_info()
    block = torch.empty(max(free - int(free_gib * GIB), 0), dtype=torch.uint8, device="cuda")
    print(f"holding {block.numel() / GIB:.2f} GiB", flush=True)
    sys.stdin.read()


async def serve(level: float, dtype: str, model: str, preset: str = "auto") -> dict:
    """Start the engine with `preset` (`auto`) on what is free now, then serve a full house; one record."""
    from bench.backends import Ours
    from bench.memory import MemoryWatch
    from engine import hardware, sizing
    from engine.engine import ChatEngine
    from engine.hosting import ENGINE_OUTPUT
    from engine.settings import load_settings

    began = time.perf_counter()
    import vllm  # noqa: F401  (the app imports it while the server starts)

    device = hardware.gpu() or hardware.cpu()  # the CPU only for a pipeline check without a GPU
    record = {"free_gib": round(device.free_bytes / GIB, 2), "level": level, "dtype": dtype, "asked": preset,
              "import_s": round(time.perf_counter() - began, 1), "started": False, "served": False, "error": None}
    watch = MemoryWatch().start()
    engine = ChatEngine(load_settings(model=model, preset=preset, dtype=dtype))
    mark = ENGINE_OUTPUT.mark()
    began = time.perf_counter()
    try:
        await engine.ensure_started()
    except Exception as error:
        record["error"] = str(error)
    record["start_s"] = round(time.perf_counter() - began, 1)
    record["stages"] = [line.strip()[-160:] for line in ENGINE_OUTPUT.since(mark) if STAGE.search(line)]
    if engine.preset is not None:
        record["preset"] = engine.preset.name
    if engine.preset is not None and engine.preset.device == "cuda":
        record["footprint_gib"] = round(sizing.footprint(engine.preset, sizing.weights_bytes(model)).total / GIB, 2)
    if engine.ready:
        record["started"] = True
        record.update(await full_house(Ours(engine, 0.8), engine.preset))
    record["peak_gib"] = round(watch.peak_gib(), 2)
    record["left_at_peak_gib"] = round(record["free_gib"] - record["peak_gib"], 2)
    engine.shutdown()
    watch.stop()
    return record


async def full_house(backend, preset) -> dict:
    """`max_num_seqs` chats of ~1k tokens and one prompt at the context limit, all at once."""
    reply = 64
    chats = [backend.run(backend.prompt(900, seed=100 + i), reply) for i in range(preset.max_num_seqs)]
    began = time.perf_counter()
    try:
        results = await asyncio.gather(*chats, backend.run(longest_prompt(backend, preset, reply), reply))
    except Exception as error:
        return {"served": False, "error": f"{type(error).__name__}: {error}"}
    wall = time.perf_counter() - began
    return {"served": all(r.tokens == reply for r in results), "chats": len(results),
            "serve_s": round(wall, 1), "tok_s": round(sum(r.tokens for r in results) / wall)}


def longest_prompt(backend, preset, reply: int) -> str:
    """A prompt that, with the chat template and the reply, fills the context to within a few tokens."""
    room = preset.max_model_len - reply - 8
    words = backend.prompt(room, seed=99).split()
    while len(backend.token_ids(" ".join(words))) > room:
        words = words[:int(len(words) * 0.99)]
    return " ".join(words)


def run_level(spec: str, model: str, timeout_s: int, log) -> dict:
    level, dtype, _ = parse_level(spec)
    holder = subprocess.Popen([sys.executable, "-m", "bench.cards", "--hold", level], cwd=ROOT,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        print(f"== {spec} GiB free: {holder.stdout.readline().strip()}", flush=True)
        proc = subprocess.run([sys.executable, "-m", "bench.cards", "--serve", spec, "--model", model], cwd=ROOT,
                              capture_output=True, text=True, timeout=timeout_s)
        log.write(f"==== {spec}\n{proc.stderr}")
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        record = json.loads(lines[-1]) if lines else {
            "level": float(level), "dtype": dtype, "started": False, "served": False,
            "error": f"exit {proc.returncode}: " + " | ".join(proc.stderr.splitlines()[-3:])}
    except subprocess.TimeoutExpired:
        record = {"level": float(level), "started": False, "served": False, "error": f"timeout after {timeout_s} s"}
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    print("   " + json.dumps({k: v for k, v in record.items() if k != "stages"}), flush=True)
    return record


def parse_level(spec: str) -> tuple[str, str, str]:
    """LEVEL[:DTYPE[:PRESET]] -> (level, dtype, preset), `auto` for what is left out."""
    level, _, rest = spec.partition(":")
    dtype, _, preset = rest.partition(":")
    return level, dtype or "auto", preset or "auto"


def table(records: list[dict]) -> str:
    lines = ["| free GiB | preset | dtype | started | start s | footprint GiB | peak GiB | left at peak | served "
             "| error |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        cells = [r.get("free_gib", r["level"]), r.get("preset", "–"), r.get("dtype", "auto"), r["started"],
                 r.get("start_s", "–"), r.get("footprint_gib", "–"), r.get("peak_gib", "–"),
                 r.get("left_at_peak_gib", "–"), r["served"], (r.get("error") or "")[:120]]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="models/ernie-0.3b-random")
    parser.add_argument("--levels", default=LEVELS, help="GiB free, comma-separated; LEVEL:float16 forces the dtype")
    parser.add_argument("--timeout", type=int, default=240, help="seconds per level")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--hold", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.hold is not None:
        return hold(args.hold)
    if args.serve:
        level, dtype, preset = parse_level(args.serve)
        print(json.dumps(asyncio.run(serve(float(level), dtype, args.model, preset))), flush=True)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"cards-{time.strftime('%Y%m%d-%H%M%S')}"
    with open(f"{stem}.log", "w") as log:
        records = [run_level(spec, args.model, args.timeout, log) for spec in args.levels.split(",")]
    path = Path(f"{stem}.json")
    path.write_text(json.dumps(records, indent=1))
    print(table(records))
    print("wrote", path)


if __name__ == "__main__":
    os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
    main()
