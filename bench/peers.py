"""The peers benchmark: this app beside what a user would run instead, on the same weights, in one run.

    python -m bench.peers --target cpu-full     # ERNIE-0.3B-shaped weights on this machine's CPU
    python -m bench.peers --target gpu          # the same on a GPU (llama.cpp rows need LLAMA_CUDA=1 builds)
    python -m bench.peers --target cpu-full --isa avx2   # every row limited to AVX2, as on most desktops

Rows: this app through its chats and its API, its engine layer (in bf16, and with 8-bit weights), a
plain `vllm serve` with the articles' flags, llama.cpp's `llama-server` on a GGUF of the same weights in
bf16 and Q8_0 (as many slots as the preset has sequences), and transformers `generate()`. Each runs in its
own process with the same prompts, lengths (`ignore_eos`) and sampling. Columns: seconds from launch to the
first token, tokens/s at 1, 8 and 32 chats, TTFT p95 at 32, peak memory. Results:
bench/results/peers-<target>-<time>.json, .log and plots.
"""

import argparse
import time
from pathlib import Path

from bench.plot import plot
from bench.run import RESULTS, run_suite
from bench.table import table
from bench.sharpen import sharpened
from engine.presets import BUILT_IN

FULL_SIZE = "models/ernie-0.3b-random"
COLUMNS = [
    ("start_to_first_token_s", "launch→1st token s", "{:.1f}"),
    ("tok_s_at_1", "1 chat tok/s", "{:.1f}"),
    ("tok_s_at_8", "8 chats tok/s", "{:.0f}"),
    ("tok_s_at_32", "32 chats tok/s", "{:.0f}"),
    ("ttft_at_32_p95_ms", "TTFT p95 at 32 ms", "{:.0f}"),
    ("peak_memory_gib", "peak GiB", "{:.2f}"),
]


# Limits the CPU rows to AVX2 (bench/avx2/sitecustomize.py says how); llama.cpp's build for AVX2 (bench/llama_cpp.sh).
AVX2_ENV = {"ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2", "LLAMA_ISA": "avx2",
            "PYTHONPATH": str(Path(__file__).resolve().parent / "avx2")}


def configs(preset: str) -> list[dict]:
    rows = [
        {"kind": "app", "preset": preset, "name": "this app: chat"},
        # the CPU engine's dtypes side by side (`auto` chooses by the processor): oneDNN multiplies bf16 only
        # with AVX-512; without it float32 may be the faster
        {"kind": "app", "preset": preset, "name": "this app: chat in bfloat16", "env": {"CHAT_DTYPE": "bfloat16"}},
        {"kind": "app", "preset": preset, "name": "this app: chat in float32", "env": {"CHAT_DTYPE": "float32"}},
        {**eight_bit(preset), "kind": "app", "name": "this app: chat with 8-bit weights"},
        # as before Dec 3: the CPU engine computing on all cores but one, left to the app's own work
        {"kind": "app", "preset": preset, "name": "this app: chat with a core left to the app",
         "env": {"VLLM_CPU_NUM_OF_RESERVED_CPU": "1"}},
        {"kind": "api", "preset": preset, "name": "this app: API"},
        {"kind": "ours", "preset": preset, "name": "this app: engine layer"},
        {**eight_bit(preset), "kind": "ours", "name": "this app: engine layer with 8-bit weights"},
        # what vLLM's top-p costs: with a top p it sorts the whole vocabulary of every sequence at every step
        {"kind": "ours", "preset": preset, "name": "this app: engine layer at top p 1", "top_p": 1.0},
        {"kind": "ours", "preset": preset, "name": "this app: engine layer with vLLM's top p", "vllm_top_p": True},
        # on a GPU: vLLM's own sampler (its sort, or Triton) where the app's engines use FlashInfer's
        {"kind": "ours", "preset": preset, "name": "this app: engine layer without FlashInfer",
         "env": {"VLLM_USE_FLASHINFER_SAMPLER": "0"}},
        {"kind": "serve", "name": "vllm serve"},
        {"kind": "llama", "preset": preset, "outtype": "bf16", "name": "llama.cpp bf16"},
        {"kind": "llama", "preset": preset, "outtype": "q8_0", "name": "llama.cpp Q8_0"},
        {"kind": "hf", "name": "transformers generate"},
    ]
    return [{**row, "suite": "peers"} for row in rows]


def eight_bit(preset: str) -> dict:
    """The row's preset with 8-bit weights: `cpu-8bit` on the processor, a custom twin of a GPU preset."""
    if preset == "cpu":
        return {"preset": "cpu-8bit"}
    return {"preset": "custom", "custom": {**BUILT_IN[preset].model_dump(exclude={"name", "purpose"}),
                                           "weights_8bit": True}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", choices=["cpu-full", "gpu"], required=True)
    parser.add_argument("--model", type=Path, default=Path(FULL_SIZE))
    parser.add_argument("--only", default="", help="row names to run, separated by commas (or by semicolons)")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per row")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--before", type=Path, help="a checkout of an earlier commit: its chat path is a row too, "
                        "measured with that checkout's own .venv (its vLLM) where it has one")
    parser.add_argument("--concurrency", default="1,8,32", help="how many chats at once the rows are measured at")
    parser.add_argument("--isa", choices=["native", "avx2"], default="native",
                        help="avx2: every row as on a processor without AVX-512 (vLLM's kernels, oneDNN, ATen and a "
                        "llama.cpp built for AVX2), on an AVX-512 machine: the rows are emulated")
    parser.add_argument("--sharpen", type=float, help="every row on a copy of the weights whose final norm is this "
                        "many times as large: random weights give every position nearly flat logits (top p 0.8 "
                        "keeps half the vocabulary), 6 gives a trained model's few likely tokens")
    args = parser.parse_args()
    if args.sharpen:
        args.model = sharpened(args.model, args.sharpen)
    rows = configs("cpu" if args.target == "cpu-full" else "4gb")
    if args.before:
        before = {**rows[0], "name": "this app: chat, before", "tree": str(args.before.resolve())}
        if (args.before / ".venv" / "bin" / "python").exists():
            before["python"] = str((args.before / ".venv" / "bin" / "python").absolute())
        rows.insert(1, before)
    rows = [{**row, "concurrency": [int(n) for n in args.concurrency.split(",")]} for row in rows]
    if args.isa == "avx2":
        rows = [{**row, "env": {**AVX2_ENV, **row.get("env", {})}} for row in rows]
    if args.only:  # names are split at ";" where one is given (a name may hold a comma)
        rows = [r for r in rows if r["name"] in args.only.split(";" if ";" in args.only else ",")]
    args.out.mkdir(parents=True, exist_ok=True)
    isa = "" if args.isa == "native" else f"-{args.isa}"
    stem = args.out / f"peers-{args.target}{isa}-{time.strftime('%Y%m%d-%H%M%S')}"
    report = run_suite("bench.peers", rows, str(args.model), stem, args.timeout)
    print(table(report, COLUMNS))
    for path in plot(report, stem):
        print("plot:", path)


if __name__ == "__main__":
    main()
