"""Both backends, and the fake the UI's tests use, meet the engine's contract (engine/backend.py) that app.py, the
chat UI and the API gate use: every member there, every method with the contract's parameters. None starts anything
here; tests/test_contract.py holds them to the contract's behaviour."""

import inspect

import pytest

from engine.backend import Backend
from engine.engine import ChatEngine
from engine.remote import RemoteEngine
from engine.settings import load_settings
from harness.fake_engine import FakeEngine

METHODS = [name for name, member in vars(Backend).items()
           if callable(member) and not name.startswith("_")]


BACKENDS = [ChatEngine, RemoteEngine, FakeEngine]
# read at collection: the methods themselves, whatever a fixture may put in their place later
METHODS_OF = {(backend, name): getattr(backend, name) for backend in BACKENDS for name in METHODS}


def backends():
    return [ChatEngine(load_settings()), RemoteEngine(load_settings(engine_url="http://127.0.0.1:9/v1")),
            FakeEngine(load_settings())]


@pytest.mark.parametrize("backend", backends(), ids=["embedded", "remote", "fake"])
def test_each_backend_has_every_member_of_the_contract(backend):
    assert isinstance(backend, Backend)
    members = [name for name, member in vars(Backend).items() if isinstance(member, property)]
    assert "preset" in members and "admit" in METHODS, "the contract's read-only properties and methods are read"
    missing = [name for name in [*members, *METHODS] if not hasattr(backend, name)]
    assert not missing, f"{type(backend).__name__} lacks {missing}"


@pytest.mark.parametrize("backend", backends(), ids=["embedded", "remote", "fake"])
@pytest.mark.parametrize("method", METHODS)
def test_each_method_takes_the_contract_s_parameters(backend, method):
    implementation = METHODS_OF[type(backend), method]
    wanted = list(inspect.signature(getattr(Backend, method)).parameters)
    has = list(inspect.signature(implementation).parameters)
    if isinstance(inspect.getattr_static(type(backend), method), staticmethod):
        wanted = wanted[1:]  # less self
    assert has[:len(wanted)] == wanted, f"{type(backend).__name__}.{method}{tuple(has)}: the contract says {wanted}"
    assert inspect.iscoroutinefunction(getattr(Backend, method)) == inspect.iscoroutinefunction(implementation), (
        f"{type(backend).__name__}.{method}: async in one, not the other")


@pytest.mark.parametrize("backend", backends(), ids=["embedded", "remote", "fake"])
async def test_chats_and_the_api_enter_through_one_admission_released_however_a_request_ends(backend):
    from engine.admission import API, CHAT

    async with backend.admit("ann", 3, API):
        async with backend.admit("bob", 1, CHAT):
            status = backend.status()
            assert (status.api_sequences, status.chat_requests) == (3, 1)
    with pytest.raises(RuntimeError):
        async with backend.admit("ann", 2, API):
            raise RuntimeError("the client went away")
    status = backend.status()
    assert (status.api_sequences, status.chat_requests) == (0, 0), "released"
    with pytest.raises(ValueError):
        async with backend.admit("", 1, API):  # every request is somebody's
            pass
    with pytest.raises(ValueError):
        async with backend.admit("ann", 1, "batch"):
            pass
