"""Run the benchmark: every configuration in its own process, then a table, a JSON file and plots.

    python -m bench.run --target cpu                 # tiny model, anyone can run it
    python -m bench.run --target gpu --model models/ernie-0.3b-random

Results go to bench/results/<target>-<time>.json (with the command, versions and
device) and bench/results/<target>-<time>-*.png.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from bench.plot import plot
from engine.presets import BUILT_IN
from bench.table import table

RESULTS = Path(__file__).resolve().parent / "results"

# Presets tuned differently, to show what each choice buys (same 4gb budget).
FOUR = BUILT_IN["4gb"].model_dump(exclude={"name", "purpose"})
CPU = BUILT_IN["cpu"].model_dump(exclude={"name", "purpose"})
GPU_CONFIGS = [
    {"kind": "ours", "preset": "4gb", "name": "ours:4gb (cold)", "switch_to": "6gb"},
    {"kind": "ours", "preset": "4gb", "name": "ours:4gb"},
    {"kind": "ours", "preset": "4gb", "name": "4gb greedy", "temperature": 0.0},
    {"kind": "ours", "preset": "6gb"},
    {"kind": "ours", "preset": "8gb"},
    # 8 bits beside bf16 (engine.presets): the smallest card's preset both ways, and 4gb with each half in 8 bits
    {"kind": "ours", "preset": "2gb"},
    {"kind": "ours", "preset": "2gb-8bit"},
    {"kind": "ours", "preset": "custom", "name": "4gb 8-bit weights", "custom": {**FOUR, "weights_8bit": True}},
    {"kind": "ours", "preset": "custom", "name": "4gb 8-bit weights and KV",
     "custom": {**FOUR, "weights_8bit": True, "kv_8bit": True}},
    {"kind": "raw", "preset": "4gb"},
    {"kind": "app", "preset": "4gb", "name": "app path:4gb"},
    {"kind": "app", "preset": "custom", "name": "app path:4gb every token", "custom": {**FOUR, "stream_interval": 1}},
    {"kind": "app", "preset": "4gb", "name": "app path:4gb no history", "history": False},
    {"kind": "api", "preset": "4gb", "name": "api path:4gb"},
    {"kind": "app", "preset": "4gb", "name": "app path:4gb via vllm serve", "remote": True},
    {"kind": "ours", "preset": "custom", "name": "4gb 16 seqs 1 GiB KV",
     "custom": {**FOUR, "max_num_seqs": 16, "kv_cache_gib": 1.0}},
    {"kind": "ours", "preset": "custom", "name": "4gb eager", "custom": {**FOUR, "cuda_graphs": False}},
    {"kind": "ours", "preset": "custom", "name": "4gb torch.compile", "custom": {**FOUR, "torch_compile": True}},
    {"kind": "ours", "preset": "custom", "name": "4gb + 4 GiB swap", "custom": {**FOUR, "swap_gib": 4}},
    {"kind": "default", "name": "vllm default (0.9, 16 seqs)"},
    {"kind": "hf", "name": "transformers generate"},
]
# Two GPUs of one host (`--target gpu2`): one engine on one GPU, data parallel over both, tensor parallel.
MANY = (1, 8, 32, 64)
GPU2_CONFIGS = [
    {"kind": "ours", "preset": "4gb", "name": "1 GPU", "concurrency": MANY},
    {"kind": "ours", "preset": "4gb", "name": "data parallel 2", "gpus": 2, "concurrency": MANY},
    {"kind": "ours", "preset": "4gb", "name": "tensor parallel 2", "gpus": 2, "parallel": "tensor",
     "concurrency": MANY},
]
CPU_CONFIGS = [
    {"kind": "ours", "preset": "cpu", "name": "ours:cpu", "switch_to": "cpu"},
    {"kind": "ours", "preset": "cpu-8bit"},
    {"kind": "raw", "preset": "cpu"},
    {"kind": "app", "preset": "cpu", "name": "app path:cpu"},
    {"kind": "app", "preset": "cpu", "name": "app path:cpu no history", "history": False},
    {"kind": "api", "preset": "cpu", "name": "api path:cpu"},
    {"kind": "hf", "name": "transformers generate"},
    # what the GPU presets' stream_interval buys the server, measured where anyone can run it
    {"kind": "ours", "preset": "custom", "name": "ours:cpu every 8 tokens", "custom": {**CPU, "stream_interval": 8}},
    {"kind": "app", "preset": "custom", "name": "app path:cpu every 8 tokens", "custom": {**CPU, "stream_interval": 8}},
]


def versions() -> dict:
    found = {"python": platform.python_version()}
    for name in ("vllm", "torch", "transformers"):
        try:
            found[name] = __import__(name).__version__
        except Exception:
            found[name] = None
    return found


def device_name() -> str:
    from engine import hardware

    gpu = hardware.gpu()
    return gpu.name if gpu else hardware.cpu().name


def run_config(config: dict, model: str, timeout_s: int, log) -> list[dict]:
    config = {**config, "model": model}
    print(f"== {config.get('name', config['kind'])}", flush=True)
    try:
        # a row with its own `python` is measured by that install, from its checkout (`tree`): another vLLM
        python, root = config.get("python") or sys.executable, Path(__file__).resolve().parent.parent
        proc = subprocess.run([python, "-m", "bench.measure", json.dumps(config)], capture_output=True,
                              text=True, timeout=timeout_s, cwd=config["tree"] if config.get("python") else root,
                              env={**os.environ, **config.get("env", {}), "VLLM_LOGGING_STREAM": "ext://sys.stderr"})
        out, err, code = proc.stdout, proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as expired:
        out, err, code = expired.stdout or "", expired.stderr or "", "timeout"
        out, err = (s.decode() if isinstance(s, bytes) else s for s in (out, err))
    log.write(err)
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    for row in rows:
        print(f"   {row['metric']:28s} {row['value']:.3f}", flush=True)
    if code != 0:
        print(f"   exited {code}; last log lines:\n" + "\n".join(err.splitlines()[-8:]), flush=True)
        rows.append({"config": config.get("name"), "metric": "error", "value": str(code)})
    return rows


def run_suite(module: str, rows: list[dict], model: str, stem: Path, timeout_s: int) -> dict:
    """Each row in a process of its own, one after another; the report, also written to `stem`.json (and the
    rows' logs to `stem`.log). `module`: the suite's, for the command line kept in the report."""
    results = []
    with open(f"{stem}.log", "w") as log:
        for row in rows:
            results += run_config(row, str(Path(model).resolve()), timeout_s, log)
    report = {"command": " ".join(["python", "-m", module, *sys.argv[1:]]), "versions": versions(),
              "device": device_name(), "model": model, "results": results}
    Path(f"{stem}.json").write_text(json.dumps(report, indent=1))
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", choices=["cpu", "gpu", "gpu2"], required=True)
    parser.add_argument("--model", default="models/tiny-ernie")
    parser.add_argument("--only", default="", help="comma-separated config names to run")
    parser.add_argument("--timeout", type=int, default=420, help="seconds per configuration")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for the JSON, log and plots")
    args = parser.parse_args()
    configs = {"gpu": GPU_CONFIGS, "gpu2": GPU2_CONFIGS, "cpu": CPU_CONFIGS}[args.target]
    if args.only:
        wanted = args.only.split(",")
        configs = [c for c in configs if c.get("name", f"{c['kind']}:{c.get('preset')}") in wanted]
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"{args.target}-{time.strftime('%Y%m%d-%H%M%S')}"
    rows = []
    with open(f"{stem}.log", "w") as log:
        for config in configs:
            rows += run_config(config, args.model, args.timeout, log)
    report = {"command": " ".join(["python", "-m", "bench.run", *sys.argv[1:]]), "versions": versions(),
              "device": device_name(), "model": args.model, "results": rows}
    Path(f"{stem}.json").write_text(json.dumps(report, indent=1))
    print(table(report))
    for path in plot(report, stem):
        print("plot:", path)


if __name__ == "__main__":
    main()
