"""One decode step of the engine, taken apart: its wall time, the CPU time of the process that runs it, and where
the step's time goes (a GPU's kernels; a processor's operators); then what those make of one stream on the small
cards the app is for, as a model.

    python -m bench.step_time --model models/ernie-0.3b-random            # on the H200: measure, then the model
    python -m bench.step_time --configs bf16,interactivity                # only these configurations
    python -m bench.step_time --configs float32,bf16 --isa avx2           # a CPU as without AVX-512 (bench.peers)
    python -m bench.step_time --cards bench/results/step-time-*.jsonl     # the model again from a measurement

Each configuration runs in a process of its own, with vLLM's engine core and worker inside it
(`VLLM_ENABLE_V1_MULTIPROCESSING=0`) so that one profiler sees the step's host side and its kernels. At 1 and 8
sequences: a timed run of `STEPS` decode steps (wall and process CPU time per step), then the same under torch's
profiler (the profiler's own cost stays out of the timed run). On a GPU the profile gives the kernels' GPU time per
step (CUDA graphs included): a step takes the longer of the host's work and the kernels. On a processor, where the
host runs the math too, it gives the operators' own time per step, grouped (matrix products, attention, the rest)
with the ten costliest by name: the step's wall time less all operators is the host's Python and scheduling.
Sampling as the app's (T 0.8, top p 0.8).
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench.peers import AVX2_ENV

ROOT = Path(__file__).resolve().parent.parent
STEPS = 256  # decode steps timed at each batch size
PROFILED_STEPS = 64
PROMPT_TOKENS = 16
# name: (a change to the preset, a change to vLLM's engine arguments, the app's CHAT_DTYPE or None)
CONFIGS = {
    "bf16": ({}, {}, "bfloat16"),
    "8-bit weights": ({"weights_8bit": True}, {}, None),
    "interactivity": ({}, {"performance_mode": "interactivity"}, "bfloat16"),  # GPUs: vLLM >= 0.3x's mode
    "float32": ({}, {}, "float32"),  # processors: what `auto` runs without AVX-512 BF16
}
DEFAULT_CONFIGS = {"gpu": "bf16,8-bit weights", "cpu": "bf16,float32,8-bit weights"}
# a processor's operators, grouped by what their names say they compute
MATMUL_WORDS = ("mm", "linear", "gemm", "matmul", "onednn", "dnnl", "int8")
ATTENTION_WORDS = ("attention", "attn", "paged", "cache")
# One stream's bytes read per step: every weight once (the tied embedding is also the output layer: 103,424 x
# 1,024 in bf16 in every row, vLLM's fp8 and llama.cpp's Q8_0 alike keep or quantize it as said) plus the KV
# cache of a ~300-token chat (18,432 bytes a token), GB.
GB_PER_STEP = {"bf16": 0.72 + 0.006, "interactivity": 0.72 + 0.006, "8-bit weights": 0.47 + 0.006,
               "llama.cpp bf16": 0.72 + 0.006, "llama.cpp Q8_0": 0.38 + 0.006}
CARDS = {"GTX 1650 4 GB": 128, "RTX 3050 laptop 4 GB": 192, "RTX 4060 8 GB": 272, "RTX 3060 12 GB": 360}  # GB/s
H200_GB_S = 4800
EFFICIENCY = 0.8  # the share of a card's bandwidth a decode step's weight reads reach (an assumption)


def measure(name: str, model: str, spy: Path | None = None) -> list[dict]:
    """In this process: build the engine for `name`, time and profile the steps at 1 and 8 sequences."""
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    import torch
    from torch.profiler import ProfilerActivity, profile
    from vllm import LLM, SamplingParams

    from engine import build, hardware, int8_weights, presets, top_p

    gpu = hardware.gpu()
    build.use_environment("cuda" if gpu else "cpu")
    base = presets.BUILT_IN["4gb" if gpu else "cpu"]
    preset_change, engine_change, dtype = CONFIGS[name]
    preset = base.model_copy(update=preset_change)
    kwargs = presets.engine_kwargs(preset, model, gpu.total_bytes if gpu else None, dtype or "auto")
    kwargs.pop("disable_log_stats", None)
    kwargs.update(engine_change)
    int8_weights.ensure_copy(kwargs["model"])  # the processor's 8-bit weights (a GPU quantizes as it loads)
    llm = LLM(**kwargs)
    vocab = llm.get_tokenizer().vocab_size

    def prompts(n: int, seed: int) -> list[dict]:
        return [{"prompt_token_ids": [(seed * 7919 + i * 104729 + j * 31) % vocab for j in range(PROMPT_TOKENS)]}
                for i in range(n)]

    def params(steps: int):  # top p as the app's requests carry it (a CPU engine's processor, engine/top_p.py)
        return top_p.hand_over(SamplingParams(temperature=0.8, top_p=0.8, max_tokens=steps, ignore_eos=True),
                               llm.llm_engine)

    llm.generate(prompts(8, 1), params(16), use_tqdm=False)  # kernels of both batch sizes compiled first
    llm.generate(prompts(1, 2), params(16), use_tqdm=False)
    if spy:  # py-spy on this process through one stream's decode: which Python the host's share of a step runs
        steps = 1500
        recorder = subprocess.Popen(["py-spy", "record", "--pid", str(os.getpid()), "--rate", "200", "--format", "raw",
                                     "--nonblocking", "--output", str(spy)], stderr=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL)
        time.sleep(1)  # py-spy attached
        for seed in range(4):
            llm.generate(prompts(1, 30 + seed), params(steps), use_tqdm=False)
        recorder.send_signal(2)  # SIGINT: py-spy writes what it sampled
        recorder.wait(timeout=60)
    rows = []
    for seqs in (1, 8):
        began, cpu = time.perf_counter(), time.process_time()
        llm.generate(prompts(seqs, 10 + seqs), params(STEPS), use_tqdm=False)
        wall_ms = (time.perf_counter() - began) * 1000 / STEPS
        cpu_ms = (time.process_time() - cpu) * 1000 / STEPS
        kernel_ms, operators = None, {}
        try:
            activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu else [])
            with profile(activities=activities) as prof:
                llm.generate(prompts(seqs, 20 + seqs), params(PROFILED_STEPS), use_tqdm=False)
                if gpu:
                    torch.cuda.synchronize()
            if gpu:
                kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
                kernel_ms = sum(e.time_range.elapsed_us() for e in kernels) / 1000 / PROFILED_STEPS
            else:
                operators = operator_ms(prof.key_averages(), PROFILED_STEPS)
        except Exception as error:  # the timed figures stand without the profile
            print(f"profiling the step failed: {error!r}", file=sys.stderr)
        rows.append({"config": name, "seqs": seqs, "wall_ms_per_step": wall_ms, "cpu_ms_per_step": cpu_ms,
                     "gpu_kernel_ms_per_step": kernel_ms, "tok_s": seqs * 1000 / wall_ms, **operators,
                     "dtype": str(llm.llm_engine.model_config.dtype).removeprefix("torch."),
                     "device": gpu.name if gpu else hardware.cpu().name, "vllm": vllm_version()})
    return rows


def vllm_version() -> str:
    import vllm

    return vllm.__version__


def operator_ms(averages, steps: int) -> dict:
    """A processor's step by operator (own time, ms per step): matrix products, attention, the rest, the top ten.

    Only torch's and vLLM's operators count (`aten::`, `_C::` and such); the profiler's ranges around Python code
    (vLLM's own labels, compiled graphs' calls) are the host's."""
    groups = {"matmul_ms_per_step": 0.0, "attention_ms_per_step": 0.0, "other_ops_ms_per_step": 0.0}
    named = []
    for event in averages:
        if "::" not in event.key or event.key.startswith("##"):
            continue
        ms = event.self_cpu_time_total / 1000 / steps
        key = event.key.lower()
        group = ("matmul_ms_per_step" if any(w in key for w in MATMUL_WORDS) else
                 "attention_ms_per_step" if any(w in key for w in ATTENTION_WORDS) else "other_ops_ms_per_step")
        groups[group] += ms
        named.append((ms, event.key))
    top = sorted(named, reverse=True)[:10]
    return {**groups, "top_operators": [{"op": key, "ms_per_step": round(ms, 3)} for ms, key in top]}


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
    parser.add_argument("--spy", action="store_true", help="also py-spy on each configuration's one-stream decode: "
                        "own and inclusive time by Python function, beside the JSONL (py-spy on PATH)")
    parser.add_argument("--spy-to", type=Path, help=argparse.SUPPRESS)  # with --one: py-spy's output
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a configuration, measured in this process
    parser.add_argument("--cards", type=Path, help="a measurement's JSONL: print the cards model from it")
    parser.add_argument("--sharpen", type=float, help="as bench.peers: weights whose final norm is this many times as "
                        "large, so that a top p keeps a trained model's few tokens (random weights keep most)")
    parser.add_argument("--configs", help="comma-separated configurations (default: "
                        f"{DEFAULT_CONFIGS['gpu']} on a GPU, {DEFAULT_CONFIGS['cpu']} on a processor)")
    parser.add_argument("--isa", choices=["native", "avx2"], default="native",
                        help="avx2: a processor's math as without AVX-512 (as bench.peers --isa avx2)")
    parser.add_argument("--llama", default="llama.cpp bf16=691.8,llama.cpp Q8_0=790.3",
                        help="llama.cpp's one-stream tok/s on the H200 (the peers run), name=value,...")
    args = parser.parse_args()
    if args.one:
        for row in measure(args.one, str(Path(args.model).resolve()), args.spy_to):
            print(json.dumps(row), flush=True)
        return
    llama = {k: float(v) for k, v in (part.split("=") for part in args.llama.split(","))}
    if args.cards:
        rows = [json.loads(line) for line in args.cards.read_text().splitlines() if line.strip()]
    else:
        from engine import hardware

        rows = []
        args.out.mkdir(parents=True, exist_ok=True)
        isa = "" if args.isa == "native" else f"-{args.isa}"
        path = args.out / f"step-time{isa}-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
        env = {**os.environ, **(AVX2_ENV if args.isa == "avx2" else {})}
        configs = args.configs or DEFAULT_CONFIGS["gpu" if hardware.gpu() else "cpu"]
        if args.sharpen:
            from bench.sharpen import sharpened

            args.model = str(sharpened(Path(args.model), args.sharpen))
        for name in configs.split(","):
            spy = path.with_name(f"{path.stem}-{name.replace(' ', '-')}-spy.txt") if args.spy else None
            done = subprocess.run([sys.executable, "-m", "bench.step_time", "--one", name, "--model", args.model,
                                   *(["--spy-to", str(spy)] if spy else [])],
                                  cwd=ROOT, capture_output=True, text=True, timeout=900, env=env)
            found = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
            if done.returncode or not found:
                print(f"== {name} exited {done.returncode}:\n" + "\n".join(done.stderr.splitlines()[-15:]))
            rows += found
            if spy and spy.exists():
                from bench.profile_app import summarize

                spy.with_suffix(".json").write_text(json.dumps(summarize(spy, top=40), indent=1))
                spy.unlink()  # the raw stacks are megabytes; the summary is what a reader needs
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        print("wrote", path)
    print(step_table(rows))
    if rows and all(r["gpu_kernel_ms_per_step"] is not None for r in rows):
        print(card_table(rows, llama))


def step_table(rows: list[dict]) -> str:
    """The steps as a Markdown table: a GPU's kernels, or a processor's operators by group."""
    lines = ["| config | dtype | seqs | wall ms/step | CPU ms/step | GPU kernels | matmul ops | attention ops | "
             "other ops | host (wall - ops) | tok/s |", "|" + "---|" * 11]
    for r in rows:
        def cell(key):
            return "-" if r.get(key) is None else f"{r[key]:.2f}"
        ops = [r.get(k) for k in ("matmul_ms_per_step", "attention_ms_per_step", "other_ops_ms_per_step")]
        host = f"{r['wall_ms_per_step'] - sum(ops):.2f}" if None not in ops else "-"
        lines.append(f"| {r['config']} | {r.get('dtype', '-')} | {r['seqs']} | {cell('wall_ms_per_step')} | "
                     f"{cell('cpu_ms_per_step')} | {cell('gpu_kernel_ms_per_step')} | {cell('matmul_ms_per_step')} | "
                     f"{cell('attention_ms_per_step')} | {cell('other_ops_ms_per_step')} | {host} | "
                     f"{r['tok_s']:.0f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
