"""The CPU runtime measured: the chat path before and after each change of engine/cpu_runtime.py, in one run.

    python -m bench.cpu_runtime --before REV --after REV --model models/full-ernie [--llama] [--rounds 2]

Each row is a real `chainlit run app.py` started as a user starts it (`.venv/bin/chainlit`, the launcher that
scripts/setup.sh writes), from a `git archive` of REV, with its 1 and 8 chats and the seconds from launch to
the first token (bench.measure's peers suite): `before` with the preloads off (`CHAT_CPU_PRELOAD=false`: as
before the launcher), `before` with them (the preloads alone: its threads unbound), `after` (the threads
bound, one core left to the app), `after` with no core left (`VLLM_CPU_NUM_OF_RESERVED_CPU=0`), and with
`--llama` llama.cpp bf16 on the same weights. `--rounds 2` runs them again in reverse order. The load average
is noted before each row, and the CPU seconds the row's processes used (the same work in every row: less
swayed by a busy machine than the rates); also what the launcher's second interpreter start costs, against what starting
again from inside the app would repeat (importing chainlit). Results: bench/results/cpu-runtime-<time>.json.
"""

import argparse
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.peers import COLUMNS
from bench.run import RESULTS, device_name, run_config, versions
from bench.table import table

ROOT = Path(__file__).resolve().parent.parent
LOAD = ("load_1min", "load", "{:.1f}")
PROBE = ("import importlib.util, sys\n"
         "spec = importlib.util.spec_from_file_location('r', {module!r})\n"
         "runtime = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(runtime)\n"
         "runtime.launch(sys.argv)\n")


def tree(rev: str, folder: Path) -> Path:
    """The files of `rev`, as a checkout of it has them."""
    folder.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def rows(before: Path, after: Path, llama: bool) -> list[tuple[dict, dict]]:
    app = {"kind": "app", "preset": "cpu", "suite": "peers", "concurrency": [1, 8]}
    found = [
        ({**app, "name": "before: no preloads", "tree": str(before)}, {"CHAT_CPU_PRELOAD": "false"}),
        ({**app, "name": "before: preloads", "tree": str(before)}, {}),
        ({**app, "name": "after: preloads and bound", "tree": str(after)}, {}),
        ({**app, "name": "after: no core left", "tree": str(after)}, {"VLLM_CPU_NUM_OF_RESERVED_CPU": "0"}),
    ]
    if llama:
        found.append(({"kind": "llama", "preset": "cpu", "outtype": "bf16", "suite": "peers", "concurrency": [1, 8],
                       "name": "llama.cpp bf16"}, {}))
    return found


def startup_costs(after: Path, runs: int = 5) -> list[dict]:
    """The launcher's relaunch (a bare interpreter start) and what an in-app relaunch would repeat, in ms."""
    probe = Path(tempfile.mkdtemp()) / "probe"
    probe.write_text(PROBE.format(module=str(after / "engine" / "cpu_runtime.py")))

    def median_ms(command: list[str], env: dict) -> float:
        times = []
        for _ in range(runs):
            began = time.perf_counter()
            subprocess.run(command, env={**os.environ, **env}, check=True, capture_output=True)
            times.append((time.perf_counter() - began) * 1000)
        return statistics.median(times)

    on = median_ms([sys.executable, str(probe)], {"LD_PRELOAD": ""})
    off = median_ms([sys.executable, str(probe)], {"CHAT_CPU_PRELOAD": "false"})
    chainlit = median_ms([sys.executable, "-c", "import chainlit.cli"], {})
    return [{"config": "launcher", "metric": "relaunch_ms", "value": on - off},
            {"config": "launcher", "metric": "import_chainlit_ms", "value": chainlit}]


def children_cpu_s() -> float:
    """CPU seconds of the ended processes below this one: a row's bench.measure, its server and engine core."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@contextlib.contextmanager
def environment(env: dict):
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the commit before the change")
    parser.add_argument("--after", required=True, help="the commit with it")
    parser.add_argument("--model", default="models/full-ernie")
    parser.add_argument("--llama", action="store_true", help="llama.cpp bf16 too (bench/llama_cpp.sh builds it)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--only", default="", help="comma-separated row names to run")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per row")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cpu-runtime-"))
    before, after = tree(args.before, work / "before"), tree(args.after, work / "after")
    once = [r for r in rows(before, after, args.llama) if not args.only or r[0]["name"] in args.only.split(",")]
    order = [(r, row) for r in range(args.rounds) for row in (once if r % 2 == 0 else once[::-1])]
    stem = RESULTS / f"cpu-runtime-{time.strftime('%Y%m%d-%H%M%S')}"
    results = startup_costs(after)
    report = {"command": " ".join(["python", "-m", "bench.cpu_runtime", *sys.argv[1:]]), "versions": versions(),
              "device": device_name(), "model": args.model, "launcher": str(Path(sys.executable).with_name("chainlit")),
              "results": results}
    with open(f"{stem}.log", "w") as log:
        for round_, (config, env) in order:
            config = {**config, "name": f"{config['name']} #{round_ + 1}"}
            load, cpu = os.getloadavg()[0], children_cpu_s()
            with environment(env):  # bench.measure and the server it starts inherit it
                found = run_config(config, str(Path(args.model).resolve()), args.timeout, log)
            results += [{"config": config["name"], "metric": "load_1min", "value": load},
                        {"config": config["name"], "metric": "cpu_s", "value": children_cpu_s() - cpu}, *found]
            report["results"] = results
            Path(f"{stem}.json").write_text(json.dumps(report, indent=1))  # after every row: a cut run keeps its rows
    print(table(report, [LOAD, *COLUMNS[:3], COLUMNS[-1], ("cpu_s", "CPU s", "{:.0f}")]))
    print({r["metric"]: round(r["value"], 1) for r in results if r["config"] == "launcher"})


if __name__ == "__main__":
    main()
