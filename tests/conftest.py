"""Shared fixtures: a tiny ERNIE-architecture model and one real vLLM engine per test session."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.presets import APP_PRESET, TEST_PRESET

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def tiny_model() -> Path:
    """The tiny model, written once per checkout under models/ (kept between runs)."""
    path = ROOT / "models" / "tiny-ernie"
    if not (path / "model.safetensors").exists():
        subprocess.run([sys.executable, str(ROOT / "scripts" / "make_tiny_model.py"), str(path)], check=True)
    return path


@pytest.fixture(scope="session")
def engine_env(tiny_model) -> dict[str, str]:
    """The CHAT_* variables that point the app at the tiny model and the test preset."""
    return {"CHAT_MODEL": str(tiny_model), "CHAT_PRESET": "custom",
            "CHAT_CUSTOM_PRESET": json.dumps(TEST_PRESET), "CHAT_DEVICE": "auto"}


@pytest.fixture(scope="module")
async def engine(engine_env):
    from engine.engine import ChatEngine
    from engine.settings import load_settings

    settings = load_settings(model=engine_env["CHAT_MODEL"], preset="custom", custom_preset=TEST_PRESET)
    chat_engine = ChatEngine(settings)
    await chat_engine.ensure_started()
    yield chat_engine
    chat_engine.shutdown()


@pytest.fixture(scope="session")
def app_server(engine_env, tmp_path_factory):
    """A real `chainlit run app.py` on a free loopback port, serving the tiny model."""
    from harness.server import ChainlitServer

    log = tmp_path_factory.mktemp("server") / "chainlit.log"
    server = ChainlitServer({**engine_env, "CHAT_CUSTOM_PRESET": json.dumps(APP_PRESET)}, log).start()
    yield server
    assert server.stop() == 0, f"the server did not exit cleanly; see {log}"
