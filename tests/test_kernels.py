"""Which sampler a GPU engine gets, and when FlashInfer's kernels are compiled ahead (engine/kernels.py)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine import build, hardware, kernels

ROOT = Path(__file__).resolve().parent.parent
H200 = hardware.Device("cuda", "NVIDIA H200", 140 << 30, 139 << 30, "580.65.06", (9, 0))


@pytest.fixture
def clean_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(build.FLASHINFER_SAMPLER, raising=False)
    monkeypatch.setattr(build, "USERS_SAMPLER_SETTING", [None])
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(kernels, "has_flashinfer", lambda: True)
    monkeypatch.setattr(kernels.importlib.metadata, "version", lambda name: "0.6.14")
    monkeypatch.setattr(hardware, "gpu", lambda: H200)


def test_a_gpu_engine_keeps_vllms_sampler_until_flashinfers_kernels_are_built(clean_environment):
    build.use_environment("cuda")
    assert os.environ[build.FLASHINFER_SAMPLER] == "0"
    assert os.environ["VLLM_USE_V2_MODEL_RUNNER"] == "0"
    done = kernels.mark("NVIDIA H200")
    done.parent.mkdir(parents=True)
    done.touch()
    build.use_environment("cuda")  # the next start (a switch, a wake) in the same process
    assert build.FLASHINFER_SAMPLER not in os.environ


def test_the_mark_is_per_flashinfer_version_and_gpu(clean_environment):
    assert kernels.mark("NVIDIA H200") != kernels.mark("NVIDIA GeForce RTX 4060")
    assert "0.6.14" in kernels.mark("NVIDIA H200").name and "/" not in kernels.mark("A/B").name


def test_a_users_own_setting_wins(clean_environment, monkeypatch):
    monkeypatch.setattr(build, "USERS_SAMPLER_SETTING", ["1"])
    monkeypatch.setenv(build.FLASHINFER_SAMPLER, "1")
    build.use_environment("cuda")
    assert os.environ[build.FLASHINFER_SAMPLER] == "1"


def test_a_cpu_engine_is_not_told_about_flashinfer(clean_environment):
    build.use_environment("cpu")
    assert build.FLASHINFER_SAMPLER not in os.environ


def test_nothing_is_compiled_without_flashinfer_or_once_built(clean_environment, monkeypatch):
    done = kernels.mark("NVIDIA H200")
    done.parent.mkdir(parents=True)
    done.touch()
    assert kernels.compile_ahead("NVIDIA H200") is None
    monkeypatch.setattr(kernels, "has_flashinfer", lambda: False)
    done.unlink()
    assert kernels.compile_ahead("NVIDIA H200") is None


def test_the_command_says_there_is_nothing_to_compile_here():
    """This machine has no GPU (and the CPU build no FlashInfer): the setup's step passes and says so."""
    done = subprocess.run([sys.executable, "-m", "engine.kernels"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0
    assert "nothing to compile" in done.stdout
