"""What a first start would compute, done ahead (engine/machine_cache.py), and which sampler a GPU engine gets."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine import build, hardware, machine_cache

ROOT = Path(__file__).resolve().parent.parent
H200 = hardware.Device("cuda", "NVIDIA H200", 140 << 30, 139 << 30, "580.65.06", (9, 0))


@pytest.fixture
def clean_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(build.FLASHINFER_SAMPLER, raising=False)
    monkeypatch.delenv("VLLM_USE_V2_MODEL_RUNNER", raising=False)
    monkeypatch.setattr(build, "USERS_SAMPLER_SETTING", [None])
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(machine_cache, "has_flashinfer", lambda: True)
    monkeypatch.setattr(machine_cache.importlib.metadata, "version", lambda name: "0.6.14")
    monkeypatch.setattr(hardware, "gpu", lambda: H200)


def test_a_gpu_engine_keeps_vllms_sampler_until_flashinfers_kernels_are_built(clean_environment):
    build.use_environment("cuda")
    assert os.environ[build.FLASHINFER_SAMPLER] == "0"
    assert "VLLM_USE_V2_MODEL_RUNNER" not in os.environ  # vLLM 0.34 refuses 0: "Model Runner V1 has been removed"
    done = machine_cache.mark("NVIDIA H200")
    done.parent.mkdir(parents=True)
    done.touch()
    build.use_environment("cuda")  # the next start (a switch, a wake) in the same process
    assert build.FLASHINFER_SAMPLER not in os.environ


def test_the_mark_is_per_flashinfer_version_and_gpu(clean_environment):
    assert machine_cache.mark("NVIDIA H200") != machine_cache.mark("NVIDIA GeForce RTX 4060")
    assert "0.6.14" in machine_cache.mark("NVIDIA H200").name and "/" not in machine_cache.mark("A/B").name


def test_a_users_own_setting_wins(clean_environment, monkeypatch):
    monkeypatch.setattr(build, "USERS_SAMPLER_SETTING", ["1"])
    monkeypatch.setenv(build.FLASHINFER_SAMPLER, "1")
    build.use_environment("cuda")
    assert os.environ[build.FLASHINFER_SAMPLER] == "1"


def test_a_cpu_engine_is_not_told_about_flashinfer(clean_environment):
    build.use_environment("cpu")
    assert build.FLASHINFER_SAMPLER not in os.environ


def test_nothing_is_compiled_without_flashinfer_or_once_built(clean_environment, monkeypatch):
    done = machine_cache.mark("NVIDIA H200")
    done.parent.mkdir(parents=True)
    done.touch()
    assert machine_cache.compile_ahead("NVIDIA H200") is None
    monkeypatch.setattr(machine_cache, "has_flashinfer", lambda: False)
    done.unlink()
    assert machine_cache.compile_ahead("NVIDIA H200") is None


@pytest.mark.slow  # imports vLLM in a process of its own (15 s here)
def test_the_setup_step_fills_vllms_inspection_and_passes_without_a_gpu(tmp_path):
    """As scripts/setup.sh runs it on this machine (no GPU, the CPU build without FlashInfer): vLLM's
    inspection of ERNIE's class lands in its cache, and no kernels are asked for."""
    env = {**os.environ, "VLLM_CACHE_ROOT": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "engine.machine_cache"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "no kernels to compile" in done.stdout
    assert [f.name for f in (tmp_path / "modelinfos").iterdir()] == [
        "vllm-model_executor-models-ernie45-Ernie4_5ForCausalLM.json"]


def test_the_server_compiles_in_a_child_that_ends_with_it(clean_environment):
    """No mark yet: the server starts `python -m engine.machine_cache --child`, bound to it (engine/lifeline.py);
    here the child finds no FlashInfer of its own and ends at once, successfully."""
    child = machine_cache.compile_ahead("NVIDIA H200")
    assert child is not None and child.args[-2:] == ["engine.machine_cache", "--child"]
    assert child.wait(120) == 0
