"""How far 8 bits move the model's next-token log-probabilities from bf16, on the same weights and prompts.

Random weights say nothing about the quality of a real model's answers, but they do show a broken 8-bit
kernel: its log-probabilities would be garbage (no agreement, nats apart), not a small drift. Each preset
loads the same checkpoint through vLLM with the arguments the app gives it (`presets.engine_kwargs`), in a
process of its own, and returns the top-20 log-probabilities at every position of the same prompts
(teacher-forced: every position sees the same tokens before it). Each run is then compared with the
bf16 one: how often the likeliest token is the same, how much of the top 20 is shared, and how far the
shared tokens' log-probabilities moved (mean, 99th percentile, max). bf16 run again in a process of its
own gives the floor: what differs between two runs of the same weights.

    python -m bench.quant_drift --device cpu --model models/ernie-0.3b-random
    python -m bench.quant_drift --device cuda --model models/ernie-0.3b-random

Writes bench/results/quant-drift-<device>-<time>.json and prints a table.
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.run import RESULTS, versions
from engine.presets import BUILT_IN

TOP = 20
PROMPTS, PROMPT_TOKENS = 16, 64
FOUR = BUILT_IN["4gb"].model_dump(exclude={"name", "purpose"})
CPU = BUILT_IN["cpu"].model_dump(exclude={"name", "purpose"})
EIGHT = BUILT_IN["cpu-8bit"].model_dump(exclude={"name", "purpose"})
# (name, preset fields): the first is the bf16 reference; bf16 again, in a process of its own, is the floor
RUNS = {
    "cpu": [("cpu (bf16)", CPU), ("cpu (bf16) again", CPU), ("cpu-8bit", EIGHT),
            ("cpu, 8-bit KV", {**CPU, "kv_8bit": True}), ("cpu-8bit and 8-bit KV", {**EIGHT, "kv_8bit": True})],
    "cuda": [("4gb (bf16)", FOUR), ("4gb (bf16) again", FOUR), ("4gb, 8-bit weights", {**FOUR, "weights_8bit": True}),
             ("4gb, 8-bit KV", {**FOUR, "kv_8bit": True}),
             ("4gb, 8-bit weights and KV", {**FOUR, "weights_8bit": True, "kv_8bit": True})],
}


def prompt_ids(vocab: int, seed: int = 7) -> list[list[int]]:
    """The same token ids for every run: random words of the vocabulary, past its special tokens."""
    rng = random.Random(seed)
    return [[rng.randrange(10, vocab) for _ in range(PROMPT_TOKENS)] for _ in range(PROMPTS)]


def top_logprobs(fields: dict, model: str, device: str) -> list[dict[int, float]]:
    """In this process: vLLM with the app's arguments for `fields`; the top-20 at every prompt position."""
    from engine import build, hardware, int8_weights, presets

    preset = presets.Preset(**{**fields, "device": device})
    build.use_environment(device)
    gpu = hardware.gpu() if device == "cuda" else None
    kwargs = presets.engine_kwargs(preset, model, gpu.total_bytes if gpu else None)
    kwargs["enable_prefix_caching"] = False  # every prompt position computed, none read back from a cache
    int8_weights.ensure_copy(kwargs["model"])
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    llm = LLM(**kwargs)
    prompts = [TokensPrompt(prompt_token_ids=ids) for ids in prompt_ids(llm.get_tokenizer().vocab_size)]
    outputs = llm.generate(prompts, SamplingParams(max_tokens=1, temperature=0, prompt_logprobs=TOP))
    return [{int(t): float(lp.logprob) for t, lp in position.items()}
            for out in outputs for position in out.prompt_logprobs[1:]]


def compare(reference: list[dict[int, float]], other: list[dict[int, float]]) -> dict:
    """Agreement of the likeliest token, the share of the top 20 in common, |delta logprob| on the shared ones."""
    same_top, shared, deltas = 0, [], []
    for ref, got in zip(reference, other, strict=True):
        ref_top = sorted(ref, key=ref.get, reverse=True)[:TOP]
        got_top = sorted(got, key=got.get, reverse=True)[:TOP]
        same_top += ref_top[0] == got_top[0]
        common = set(ref_top) & set(got_top)
        shared.append(len(common) / TOP)
        deltas += [abs(ref[t] - got[t]) for t in common]
    deltas.sort()
    spread = statistics.median(max(r.values()) - sorted(r.values(), reverse=True)[TOP - 1] for r in reference)
    return {"positions": len(reference), "top1_agreement": same_top / len(reference),
            "top20_shared": statistics.mean(shared), "mean_abs_dlogprob": statistics.mean(deltas),
            "p99_abs_dlogprob": deltas[int(0.99 * (len(deltas) - 1))], "max_abs_dlogprob": deltas[-1],
            "reference_top1_to_top20_nats": spread}


def run_one(fields: dict, model: str, device: str, timeout_s: int) -> list[dict[int, float]]:
    proc = subprocess.run([sys.executable, "-m", "bench.quant_drift", "--one", json.dumps(fields), "--model", model,
                           "--device", device], capture_output=True, text=True, timeout=timeout_s,
                          cwd=Path(__file__).resolve().parent.parent, env={**os.environ, "VLLM_NO_USAGE_STATS": "1"})
    lines = [line for line in proc.stdout.splitlines() if line.startswith("[")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"exit {proc.returncode}: " + "\n".join(proc.stderr.splitlines()[-12:]))
    return [{int(t): lp for t, lp in position.items()} for position in json.loads(lines[-1])]


def table(rows: list[dict]) -> str:
    lines = ["| against bf16 | positions | top-1 agreement | top-20 shared | mean abs dlogprob | p99 | max |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['name']} | {r['positions']} | {r['top1_agreement']:.1%} | {r['top20_shared']:.1%} | "
                     f"{r['mean_abs_dlogprob']:.4f} | {r['p99_abs_dlogprob']:.4f} | {r['max_abs_dlogprob']:.4f} |")
    if rows:
        lines.append(f"\nbf16's top 20 span {rows[0]['reference_top1_to_top20_nats']:.2f} nats (median position)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=sorted(RUNS), default="cpu")
    parser.add_argument("--model", default="models/ernie-0.3b-random")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per run")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    model = str(Path(args.model).resolve())
    if args.one:
        print(json.dumps(top_logprobs(json.loads(args.one), model, args.device)), flush=True)
        return
    (reference_name, reference_fields), *others = RUNS[args.device]
    print(f"== {reference_name}", flush=True)
    reference = run_one(reference_fields, model, args.device, args.timeout)
    rows = []
    for name, fields in others:
        print(f"== {name}", flush=True)
        try:
            rows.append({"name": name, **compare(reference, run_one(fields, model, args.device, args.timeout))})
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            rows.append({"name": name, "error": str(error)[-2000:]})
            print(f"   failed: {str(error)[-600:]}", flush=True)
    report = {"command": " ".join(["python", "-m", "bench.quant_drift", *sys.argv[1:]]), "versions": versions(),
              "device": args.device, "model": args.model, "reference": reference_name, "results": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"quant-drift-{args.device}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(report, indent=1))
    print(table([r for r in rows if "error" not in r]))
    print("wrote", path)


if __name__ == "__main__":
    main()
