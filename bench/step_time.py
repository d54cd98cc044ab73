"""One decode step of the engine, taken apart: its wall time, the CPU time of the process that runs it, and the
GPU time of its kernels; then what those make of one stream on the small cards the app is for, as a model.

    python -m bench.step_time --model models/ernie-0.3b-random            # on the H200: measure, then the model
    python -m bench.step_time --cards bench/results/step-time-*.jsonl     # the model again from a measurement

Each configuration (the `4gb` preset in bf16, and with 8-bit weights) runs in a process of its own, with
vLLM's engine core and worker inside it (`VLLM_ENABLE_V1_MULTIPROCESSING=0`) so that one profiler sees the
step's CPU side and its kernels. At 1 and 8 sequences: a timed run of `STEPS` decode steps (wall and process
CPU time per step), then the same under torch's profiler (the kernels' GPU time per step, CUDA graphs
included; the profiler's own cost stays out of the timed run). Sampling as the app's (T 0.8, top p 0.8).
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEPS = 256  # decode steps timed at each batch size
PROFILED_STEPS = 64
PROMPT_TOKENS = 16
CONFIGS = {"bf16": {}, "8-bit weights": {"weights_8bit": True}}
# One stream's bytes read per step: every weight once (the tied embedding is also the output layer: 103,424 x
# 1,024 in bf16 in every row, vLLM's fp8 and llama.cpp's Q8_0 alike keep or quantize it as said) plus the KV
# cache of a ~300-token chat (18,432 bytes a token), GB.
GB_PER_STEP = {"bf16": 0.72 + 0.006, "8-bit weights": 0.47 + 0.006, "llama.cpp bf16": 0.72 + 0.006,
               "llama.cpp Q8_0": 0.38 + 0.006}
CARDS = {"GTX 1650 4 GB": 128, "RTX 3050 laptop 4 GB": 192, "RTX 4060 8 GB": 272, "RTX 3060 12 GB": 360}  # GB/s
H200_GB_S = 4800
EFFICIENCY = 0.8  # the share of a card's bandwidth a decode step's weight reads reach (an assumption)


def measure(name: str, model: str) -> list[dict]:
    """In this process: build the engine for `name`, time and profile the steps at 1 and 8 sequences."""
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    import torch
    from torch.profiler import ProfilerActivity, profile
    from vllm import LLM, SamplingParams

    from engine import build, hardware, int8_weights, presets

    gpu = hardware.gpu()
    build.use_environment("cuda" if gpu else "cpu")
    base = presets.BUILT_IN["4gb" if gpu else "cpu"]
    preset = base.model_copy(update=CONFIGS[name])
    kwargs = presets.engine_kwargs(preset, model, gpu.total_bytes if gpu else None)
    kwargs.pop("disable_log_stats", None)
    int8_weights.ensure_copy(kwargs["model"])  # the processor's 8-bit weights (a GPU quantizes as it loads)
    llm = LLM(**kwargs)
    vocab = llm.get_tokenizer().vocab_size

    def prompts(n: int, seed: int) -> list[dict]:
        return [{"prompt_token_ids": [(seed * 7919 + i * 104729 + j * 31) % vocab for j in range(PROMPT_TOKENS)]}
                for i in range(n)]

    def params(steps: int):
        return SamplingParams(temperature=0.8, top_p=0.8, max_tokens=steps, ignore_eos=True)

    llm.generate(prompts(8, 1), params(16), use_tqdm=False)  # kernels of both batch sizes compiled first
    llm.generate(prompts(1, 2), params(16), use_tqdm=False)
    rows = []
    for seqs in (1, 8):
        began, cpu = time.perf_counter(), time.process_time()
        llm.generate(prompts(seqs, 10 + seqs), params(STEPS), use_tqdm=False)
        wall_ms = (time.perf_counter() - began) * 1000 / STEPS
        cpu_ms = (time.process_time() - cpu) * 1000 / STEPS
        kernel_ms = None
        if gpu:
            try:
                with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                    llm.generate(prompts(seqs, 20 + seqs), params(PROFILED_STEPS), use_tqdm=False)
                    torch.cuda.synchronize()
                kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
                kernel_ms = sum(e.time_range.elapsed_us() for e in kernels) / 1000 / PROFILED_STEPS
            except Exception as error:  # the timed figures stand without the kernels' share
                print(f"profiling the kernels failed: {error!r}", file=sys.stderr)
        rows.append({"config": name, "seqs": seqs, "wall_ms_per_step": wall_ms, "cpu_ms_per_step": cpu_ms,
                     "gpu_kernel_ms_per_step": kernel_ms, "tok_s": seqs * 1000 / wall_ms,
                     "device": gpu.name if gpu else hardware.cpu().name})
    return rows


def card_table(rows: list[dict], llama_tok_s: dict[str, float]) -> str:
    """One stream's tok/s on each card, modelled from the H200's steps at 1 sequence and each card's bandwidth.

    This app: a step takes the longer of its CPU side and its kernels (vLLM schedules the next step while the
    GPU runs this one); on a card, the kernels take the longer of their H200 time and the step's bytes at
    EFFICIENCY of the card's bandwidth. llama.cpp: its H200 time per token less its bytes at the H200's
    bandwidth is host and launch time, and a card adds its bytes at EFFICIENCY of its bandwidth (one after
    the other). Both assume the card's host processor is as fast as the H200 machine's."""
    one = {r["config"]: r for r in rows if r["seqs"] == 1}
    header = ["card (GB/s)", *[f"this app {k}" for k in one], *llama_tok_s]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for card, bandwidth in CARDS.items():
        cells = [f"{card} ({bandwidth})"]
        for name, row in one.items():
            read_ms = GB_PER_STEP[name] / (bandwidth * EFFICIENCY) * 1000
            cells.append(f"{1000 / max(row['wall_ms_per_step'], row['gpu_kernel_ms_per_step'], read_ms):.0f}")
        for name, tok_s in llama_tok_s.items():
            host_ms = 1000 / tok_s - GB_PER_STEP[name] / H200_GB_S * 1000
            cells.append(f"{1000 / (host_ms + GB_PER_STEP[name] / (bandwidth * EFFICIENCY) * 1000):.0f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="models/ernie-0.3b-random")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a configuration, measured in this process
    parser.add_argument("--cards", type=Path, help="a measurement's JSONL: print the cards model from it")
    parser.add_argument("--llama", default="llama.cpp bf16=691.8,llama.cpp Q8_0=790.3",
                        help="llama.cpp's one-stream tok/s on the H200 (the peers run), name=value,...")
    args = parser.parse_args()
    if args.one:
        for row in measure(args.one, str(Path(args.model).resolve())):
            print(json.dumps(row), flush=True)
        return
    llama = {k: float(v) for k, v in (part.split("=") for part in args.llama.split(","))}
    if args.cards:
        rows = [json.loads(line) for line in args.cards.read_text().splitlines() if line.strip()]
    else:
        rows = []
        args.out.mkdir(parents=True, exist_ok=True)
        path = args.out / f"step-time-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
        for name in CONFIGS:
            done = subprocess.run([sys.executable, "-m", "bench.step_time", "--one", name, "--model", args.model],
                                  cwd=ROOT, capture_output=True, text=True, timeout=900)
            found = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
            if done.returncode or not found:
                print(f"== {name} exited {done.returncode}:\n" + "\n".join(done.stderr.splitlines()[-15:]))
            rows += found
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        print("wrote", path)
    print("| config | seqs | wall ms/step | CPU ms/step | GPU kernels ms/step | tok/s |\n|---|---|---|---|---|---|")
    for r in rows:
        kernel = r["gpu_kernel_ms_per_step"]
        print(f"| {r['config']} | {r['seqs']} | {r['wall_ms_per_step']:.2f} | {r['cpu_ms_per_step']:.2f} | "
              f"{'-' if kernel is None else f'{kernel:.3f}'} | {r['tok_s']:.0f} |")
    if all(r["gpu_kernel_ms_per_step"] is not None for r in rows):
        print(card_table(rows, llama))


if __name__ == "__main__":
    main()
