"""vLLM's own options for one stream, each in a process of its own: the 4gb preset's engine arguments with one change.

    python -m bench.engine_options --model models/ernie-0.3b-random [--sharpen 6] [--only NAME,...] [--out DIR]
    python -m bench.engine_options ... --only preset,interactivity --repeat 2   # alternated: a,b,a,b

Each row starts vLLM's AsyncLLM with the arguments engine/presets.py gives the `4gb` preset on this GPU (and the
environment engine/build.py gives a GPU engine), changed as the row says, then measures one stream (3 x 512
tokens, after a warm-up), 8 and 32 streams (128 tokens each, 3 rounds, the median), all at the app's sampling
(temperature 0.8, top p 0.8, `ignore_eos`). One JSON line per number, printed and appended to
DIR/engine-options-<time>.jsonl with the vLLM version. A row whose option the installed vLLM does not know fails
on its own, with the error in the file.

The rows ask what a newer vLLM offers for one chat: its CUDA graph modes (the preset captures full graphs of
decode steps only, without torch.compile), `performance_mode="interactivity"` (vLLM >= 0.3x: fine-grained graphs
at small batches), async scheduling off (on by default since 0.26), and vLLM's own default compilation.
"""

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROWS = {
    "preset": {},
    "interactivity": {"performance_mode": "interactivity"},
    "no async scheduling": {"async_scheduling": False},
    "FULL graphs": {"compilation_config": {"mode": 0, "cudagraph_mode": "FULL"}},
    "vLLM default compilation": {"compilation_config": None},  # mode 3 + FULL_AND_PIECEWISE, vLLM's defaults
    "interactivity + vLLM default compilation": {"performance_mode": "interactivity", "compilation_config": None},
    "eager": {"enforce_eager": True, "compilation_config": None},
}
ONE_STREAM_TOKENS, ROUNDS = 512, 3


def engine_kwargs(model: str, change: dict) -> dict:
    from engine import build, hardware
    from engine.presets import BUILT_IN, engine_kwargs as preset_kwargs

    build.use_environment("cuda")
    device = hardware.gpu()
    kwargs = preset_kwargs(BUILT_IN["4gb"], model, device and device.total_bytes)
    if "compilation_config" in change and kwargs.get("compilation_config") and change["compilation_config"]:
        change = {**change, "compilation_config": {**kwargs["compilation_config"], **change["compilation_config"]}}
    kwargs.update(change)
    return {k: v for k, v in kwargs.items() if v is not None}


async def one_row(name: str, model: str, emit) -> None:
    import vllm
    from vllm import AsyncEngineArgs, SamplingParams
    from vllm.sampling_params import RequestOutputKind
    from vllm.v1.engine.async_llm import AsyncLLM

    kwargs = engine_kwargs(model, ROWS[name])
    emit("engine_kwargs", kwargs, vllm=vllm.__version__)
    began = time.perf_counter()
    llm = AsyncLLM.from_engine_args(AsyncEngineArgs(**kwargs))
    emit("start_s", time.perf_counter() - began)
    rng = random.Random(7)
    vocab = 100000

    def prompt(size: int) -> dict:
        return {"prompt_token_ids": [rng.randrange(300, vocab) for _ in range(size)]}

    async def run(tokens: int, size: int = 32, temperature: float = 0.8) -> tuple[float, float, float, int]:
        params = SamplingParams(temperature=temperature, top_p=0.8, max_tokens=tokens, ignore_eos=True,
                                output_kind=RequestOutputKind.DELTA)
        sent, first, count = time.perf_counter(), None, 0
        async for out in llm.generate(prompt(size), params, uuid.uuid4().hex):
            count += len(out.outputs[0].token_ids)
            first = first or time.perf_counter()
        return sent, first, time.perf_counter(), count

    try:
        await run(64)  # the first sampled request compiles the sampler's kernels
        await run(64, temperature=0.0)
        for label, temperature in (("", 0.8), ("_greedy", 0.0)):
            rates = []
            for _ in range(ROUNDS):
                sent, first, done, count = await run(ONE_STREAM_TOKENS, temperature=temperature)
                rates.append((count - 1) / (done - first))
            emit(f"one_stream_decode_tok_s{label}", statistics.median(rates), rounds=rates)
        for users in (8, 32):
            await asyncio.gather(*(run(8, 100) for _ in range(users)))
            rates = []
            for _ in range(ROUNDS):
                results = await asyncio.gather(*(run(128, 100) for _ in range(users)))
                wall = max(r[2] for r in results) - min(r[0] for r in results)
                rates.append(sum(r[3] for r in results) / wall)
            emit(f"tok_s_at_{users}", statistics.median(rates), rounds=rates)
    finally:
        llm.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=Path("models/ernie-0.3b-random"))
    parser.add_argument("--sharpen", type=float, help="as bench.peers: rows on weights whose final norm is this many "
                        "times as large (a trained model's few likely tokens)")
    parser.add_argument("--only", default="", help="comma-separated row names")
    parser.add_argument("--repeat", type=int, default=1, help="run the rows this many times, alternated, each time "
                        "in a new process (a difference between rows is real only if it holds in every round)")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per row")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # run one row in this process
    args = parser.parse_args()
    if args.one:
        def emit(metric, value, **extra):
            print(json.dumps({"config": args.one, "metric": metric, "value": value, **extra}), flush=True)

        asyncio.run(one_row(args.one, str(args.model), emit))
        return
    model = args.model
    if args.sharpen:
        from bench.sharpen import sharpened

        model = sharpened(model, args.sharpen)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"engine-options-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
    names = [n for n in ROWS if not args.only or n in args.only.split(",")] * args.repeat
    root = Path(__file__).resolve().parent.parent
    with open(path, "a") as out, open(path.with_suffix(".log"), "a") as log:
        for name in names:
            print(f"== {name}", flush=True)
            command = [sys.executable, "-m", "bench.engine_options", "--model", str(Path(model).resolve()),
                       "--one", name]
            try:
                proc = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout, cwd=root,
                                      env={**os.environ, "VLLM_LOGGING_STREAM": "ext://sys.stderr"})
                stdout, stderr, code = proc.stdout, proc.stderr, proc.returncode
            except subprocess.TimeoutExpired as expired:
                stdout, stderr, code = (s.decode() if isinstance(s, bytes) else s or "" for s in
                                        (expired.stdout, expired.stderr, "timeout"))
            log.write(f"== {name}\n{stderr}\n")
            for line in stdout.splitlines():
                if line.startswith("{"):
                    out.write(line + "\n")
                    row = json.loads(line)
                    if row["metric"] != "engine_kwargs":
                        print(f"   {row['metric']:32s} {row['value']:.1f}", flush=True)
            if code != 0:
                tail = stderr.strip().splitlines()[-6:]
                out.write(json.dumps({"config": name, "metric": "error", "value": str(code), "tail": tail}) + "\n")
                print(f"   exited {code}:\n      " + "\n      ".join(tail), flush=True)
            out.flush()
    print("written:", path)


if __name__ == "__main__":
    main()
