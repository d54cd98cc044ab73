"""The README's helper commands work as written, from a fresh shell."""

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_offline_model_step_works_with_the_plain_python_on_the_path(tmp_path):
    # README: `python scripts/make_tiny_model.py` is typed outside the venv; the script must find it.
    python = shutil.which("python3") or shutil.which("python")
    done = subprocess.run([python, str(ROOT / "scripts" / "make_tiny_model.py"), str(tmp_path / "tiny")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "tiny" / "model.safetensors").exists() and "written to" in done.stdout
