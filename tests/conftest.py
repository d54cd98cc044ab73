"""Shared fixtures: a tiny ERNIE-architecture model and one real vLLM engine per test session; and the two tiers.

A test is `slow` when it, a fixture it uses, or a function of its module that either calls starts an engine, a
server or a browser (the calls in STARTS, found in their source at collection); `pytest -m "not slow"` runs the
rest in under a minute. Each test left in that tier is held to it: starting any of those raises and says so.
"""

import inspect
import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from harness.presets import APP_PRESET, TEST_PRESET

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# engines and servers of the tests stay on through the suite's pauses; tests/test_idle.py sets its own idle time
os.environ.setdefault("CHAT_IDLE_MINUTES", "0")


@pytest.fixture(scope="session")
def tiny_model() -> Path:
    """The tiny model, written once per checkout under models/ (kept between runs)."""
    path = ROOT / "models" / "tiny-ernie"
    if not (path / "model.safetensors").exists():
        subprocess.run([sys.executable, str(ROOT / "scripts" / "make_tiny_model.py"), str(path)], check=True)
    return path


def _layout(name: str) -> Path:
    """The repo's `name` layout (harness/ernie_layouts.py), written once per checkout under models/."""
    path = ROOT / "models" / f"ernie-{name}-layout"
    if not (path / "model.safetensors").exists():
        subprocess.run([sys.executable, "-m", "harness.ernie_layouts", name, str(path)], check=True, cwd=ROOT)
    return path


@pytest.fixture(scope="session")
def first_layout_model() -> Path:
    """`baidu/ERNIE-4.5-0.3B-PT` as first published (and on ModelScope in July 2025), in a small shape."""
    return _layout("first")


@pytest.fixture(scope="session")
def current_layout_model() -> Path:
    """`baidu/ERNIE-4.5-0.3B-PT` as the hub has it since 2025-07-28, in a small shape."""
    return _layout("current")


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
    assert not server.left_behind, f"the server left processes running: {server.left_behind}; see {log}"


# What starts an engine, a server or a browser: the harness's servers, an engine's first start or reply, Chromium,
# the app, another Python (a fresh interpreter that imports torch or vLLM takes seconds to tens of seconds).
STARTS = re.compile(r"\b(ChainlitServer|VllmServer|PostgresServer|NginxProxy|HubMirror|ModelScopeMirror"
                    r"|restartable_with_history)\("
                    r"|\.ensure_started\("
                    r"|\.stream\(|\bwebdriver\.|\"chainlit\", \"run\""
                    r"|\bsubprocess\.(run|Popen|check_call|check_output)\(\[(sys\.executable|python)\b")

# Fixtures whose start is paid once per checkout and kept between runs: the test models' files.
ONCE_PER_CHECKOUT = {"tiny_model", "first_layout_model", "current_layout_model"}


def _starts_something(func, seen: set) -> bool:
    """Whether `func`'s source, or that of a function of its own module that it names, matches STARTS."""
    func = inspect.unwrap(func)
    if not isinstance(func, types.FunctionType) or func in seen:
        return False
    seen.add(func)
    try:
        if STARTS.search(inspect.getsource(func)):
            return True
    except (OSError, TypeError):
        return False
    codes, names = [func.__code__], set()
    while codes:
        code = codes.pop()
        names.update(code.co_names)
        codes += [const for const in code.co_consts if isinstance(const, types.CodeType)]
    # plain functions only: a fixture of the same name (`engine`, say) is judged where a test uses it
    return any(_starts_something(called, seen) for name in names
               if isinstance(called := func.__globals__.get(name), types.FunctionType)
               and called.__module__ == func.__module__)


def _is_slow(item) -> bool:
    if item.get_closest_marker("slow"):
        return True
    if item.get_closest_marker("fast"):  # e.g. the contract suite on its fakes: `_fast_tests_start_nothing` holds it
        return False
    seen: set = set()
    fixtures = [fixture.func for name, defs in item._fixtureinfo.name2fixturedefs.items() for fixture in defs
                if name not in ONCE_PER_CHECKOUT]
    return any(_starts_something(func, seen) for func in [getattr(item, "obj", None), *fixtures])


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "browser" in item.fixturenames:
            item.add_marker(pytest.mark.browser)
        if _is_slow(item):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _fast_tests_start_nothing(request, monkeypatch):
    """In a test of the fast tier, building a vLLM engine or starting one of the harness's servers fails at once
    and says why (a start its source does not show, inside another module, say), instead of slowing the tier."""
    if request.node.get_closest_marker("slow"):
        return
    from engine import build
    from harness import hub_mirror, nginx, postgres, server, vllm_server

    def refuse(*args, **kwargs):
        raise RuntimeError(f"{request.node.nodeid} starts an engine or a server but is not marked slow: "
                           "add @pytest.mark.slow, or the call that starts it to STARTS in tests/conftest.py")

    for owner, name in ((build, "build_engine"), (server.ChainlitServer, "start"), (server.ChainlitServer, "launch"),
                        (vllm_server.VllmServer, "start"), (postgres.PostgresServer, "start"),
                        (nginx.NginxProxy, "start"), (hub_mirror.FolderMirror, "__enter__")):
        monkeypatch.setattr(owner, name, refuse)
