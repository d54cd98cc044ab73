"""The lock holds everything vLLM's engine core imports while it builds this model, checked without a device: the
GPU lock (in .venv-gpu, run by tests/test_locks.py) walks the GPU worker's path, the CPU lock the CPU worker's
(harness/engine_imports.py says how). A package missing from a lock fails here, not at a user's first start.
"""

import subprocess
import sys

import pytest

from harness import locks

# In the fast tier although each test starts a Python that imports vLLM (10-25 s): the GPU lock's run
# (tests/test_locks.py) is that tier, and this is what catches a package the GPU path needs and the lock lacks.
pytestmark = pytest.mark.fast

# A package each build's path needs, for the proof that the walk sees one go missing: the GPU warm-up reaches
# torchvision through the Qwen3-VL model (its absence stopped every GPU engine start); every build's model needs
# transformers.
NEEDED = {"gpu": "torchvision", "cpu": "transformers"}


def _walk(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.engine_imports", *args], cwd=locks.ROOT,
                          capture_output=True, text=True, timeout=600)


def _summary(run: subprocess.CompletedProcess) -> str:
    return "\n".join(line for line in run.stdout.splitlines() if line.startswith(("engine-imports", "  MISSING")))


def test_every_module_the_engine_core_imports_to_build_this_model_is_installed():
    run = _walk()
    assert run.returncode == 0, f"the engine core's build path needs a package this lock lacks:\n{_summary(run)}\n" \
                                f"{run.stderr[-3000:]}"
    imported = int(run.stdout.split("engine-imports")[1].split(":")[1].split()[0])
    assert imported > 150, f"the walk imported only {imported} modules: {_summary(run)}"


def test_the_walk_fails_when_a_package_the_path_needs_is_left_out():
    package = NEEDED[locks.installed_build()]
    run = _walk("--without", package)
    assert run.returncode == 1, f"leaving {package} out went unseen:\n{_summary(run)}"
    assert package in _summary(run), _summary(run)
