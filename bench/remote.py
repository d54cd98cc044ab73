"""The remote path against its own server, in one run: what `vllm serve` delivers to direct clients, and what
reaches the chats through one and two app processes in remote mode, with and without the server's knobs.

    python -m bench.remote --target cpu      # the tiny model on this CPU: the per-token path under load
    python -m bench.remote --target gpu      # the 4gb preset's engine on a GPU (bash bench/gpu/run.sh remote)
    python -m bench.profile_app --model M --engine-url URL   # where an app process's time goes, by py-spy

Every row starts its own `vllm serve` with the same engine arguments (the preset's, as the app's engine would
have them) and the row's extra flags. Direct clients send the same chat requests the app sends (chat
completions of one user turn, streamed), so the two differ only by the app in between. Columns: tokens/s at
1, 8 and 32 chats, TTFT p95 at 32, and both as a share of the server alone with the same flags.
Results: bench/results/remote-<target>-<time>.json, .log and plots.
"""

import argparse
import time
from pathlib import Path

from bench.plot import plot
from bench.run import RESULTS, run_suite
from bench.table import table

# Enough sequences for 32 chats at once; a small model so the CPU streams fast enough to load the path per token.
CPU_PRESET = {"name": "custom", "purpose": "remote benchmark", "device": "cpu", "kv_cache_gib": 1.0,
              "max_model_len": 4096, "max_num_seqs": 32, "max_num_batched_tokens": 4096, "cuda_graphs": False}
COLUMNS = [
    ("tok_s_at_1", "1 chat tok/s", "{:.0f}"),
    ("tok_s_at_8", "8 chats tok/s", "{:.0f}"),
    ("tok_s_at_32", "32 chats tok/s", "{:.0f}"),
    ("ttft_at_32_p95_ms", "TTFT p95 at 32 ms", "{:.0f}"),
]
KNOBS = {"": {}, ", stream interval 8": {"stream_interval": 8}, ", 2 API servers": {"api_server_count": 2}}


def configs(target: str) -> list[dict]:
    preset = {"preset": "custom", "custom": CPU_PRESET} if target == "cpu" else {"preset": "4gb"}
    rows = []
    for label, flags in KNOBS.items():
        alone = f"vllm serve alone{label}"
        rows += [
            {**preset, "kind": "serve", "name": alone, "serve_flags": flags, "chat": True},
            {**preset, "kind": "app", "name": f"through 1 app process{label}", "remote": True, "serve_flags": flags,
             "alone": alone},
            {**preset, "kind": "app", "name": f"through 2 app processes{label}", "remote": True,
             "serve_flags": flags, "app_processes": 2, "alone": alone},
        ]
    return [{**row, "suite": "peers"} for row in rows]


def shares(rows: list[dict], results: list[dict]) -> list[str]:
    """Each app row's 32-chat rate and p95 TTFT against its server alone (`alone`: the same flags)."""
    value = {(r["config"], r["metric"]): r["value"] for r in results if isinstance(r.get("value"), (int, float))}
    lines = []
    for row in (r for r in rows if "alone" in r):
        name, alone = row["name"], row["alone"]
        try:
            rate = value[(name, "tok_s_at_32")] / value[(alone, "tok_s_at_32")]
            wait = value[(name, "ttft_at_32_p95_ms")] / value[(alone, "ttft_at_32_p95_ms")]
        except (KeyError, ZeroDivisionError):
            continue
        lines.append(f"{name}: {rate:.0%} of the server's 32-chat rate, p95 TTFT {wait:.2f}x the server's")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", choices=["cpu", "gpu"], required=True)
    parser.add_argument("--model", default=None, help="default: models/tiny-ernie on the CPU, the full size on a GPU")
    parser.add_argument("--only", default="", help="comma-separated row names to run")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per row")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    model = args.model or ("models/tiny-ernie" if args.target == "cpu" else "models/ernie-0.3b-random")
    rows = configs(args.target)
    if args.only:
        rows = [r for r in rows if r["name"] in args.only.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"remote-{args.target}-{time.strftime('%Y%m%d-%H%M%S')}"
    report = run_suite("bench.remote", rows, model, stem, args.timeout)
    print(table(report, COLUMNS))
    print("\n".join(shares(rows, report["results"])))
    for path in plot(report, stem):
        print("plot:", path)


if __name__ == "__main__":
    main()
