"""The engine's contract (engine/backend.py) as behaviour, one suite for every backend: the fake the UI's tests
use (harness/fake_engine.py) and the remote backend against a vLLM server imitated in memory (harness/fake_vllm.py)
in the fast tier; the embedded engine on the tiny model and the remote backend against a real `vllm serve` in the
slow one. A backend that drifts from the others (a stream that ends without its Stats, an abort that does not end
the reply, a start that fails without saying so in its state) fails here under its own name.
"""

import pytest

from engine.admission import CHAT
from engine.backend import STATES, Backend
from engine.errors import ChatError
from engine.reports import Stats
from engine.settings import Sampling, load_settings
from harness.presets import TEST_PRESET

HELLO = [{"role": "user", "content": "Hello!"}]
SHORT = Sampling(max_tokens=24, ignore_eos=True)
LONG = Sampling(max_tokens=1500, ignore_eos=True)  # long enough to be aborted midway everywhere
KINDS = [pytest.param("fake", marks=pytest.mark.fast), pytest.param("remote-mock", marks=pytest.mark.fast),
         pytest.param("embedded", marks=pytest.mark.slow), pytest.param("remote-vllm", marks=pytest.mark.slow)]


@pytest.fixture(scope="module")
def vllm_server(tiny_model, tmp_path_factory):
    from harness.vllm_server import VllmServer

    server = VllmServer(str(tiny_model), tmp_path_factory.mktemp("vllm") / "serve.log").start()
    yield server
    server.stop()


async def started(backend):
    """`backend`, started (or connected); raises what its start raises."""
    await backend.ensure_started()
    return backend


def make(kind: str, request, broken: bool = False):
    """A backend of `kind`, not started; `broken`: one whose start must fail (no model, no server)."""
    from engine.engine import ChatEngine
    from engine.remote import RemoteEngine
    from harness.fake_engine import FakeEngine
    from harness.fake_vllm import FakeVllm

    if kind == "fake":
        fake = FakeEngine(load_settings())
        fake.started = False
        fake.refuse_start = ChatError("The model could not be found.", "Set CHAT_MODEL.") if broken else None
        fake.deltas = [f" word{n}" for n in range(40)]
        return fake
    if kind == "remote-mock":
        server = FakeVllm(reply_tokens=400, token_s=0.005)
        url = "http://127.0.0.1:9/v1" if broken else "http://fake-vllm/v1"
        return RemoteEngine(load_settings(engine_url=url), transport=None if broken else server.transport)
    if kind == "embedded":
        model = request.getfixturevalue("tmp_path") / "no-model" if broken else request.getfixturevalue("tiny_model")
        return ChatEngine(load_settings(model=str(model), preset="custom", custom_preset=TEST_PRESET))
    url = "http://127.0.0.1:9/v1" if broken else request.getfixturevalue("vllm_server").url
    return RemoteEngine(load_settings(engine_url=url))


@pytest.fixture(params=KINDS)
async def fresh(request):
    made = make(request.param, request)
    yield made
    made.shutdown()


@pytest.fixture(params=KINDS, scope="module")
async def backend(request):
    """One started backend of each kind for the module (an embedded engine is started once, as in the app)."""
    made = await started(make(request.param, request))
    yield made
    made.shutdown()


@pytest.fixture(params=KINDS)
async def broken(request):
    made = make(request.param, request, broken=True)
    yield made
    made.shutdown()


def test_nothing_starts_by_itself_not_even_when_the_status_is_read(fresh):
    assert isinstance(fresh, Backend)
    status = fresh.status()
    assert not fresh.ready and status.state in STATES and status.state not in ("ready", "starting")


async def test_a_started_backend_streams_deltas_then_one_stats(backend):
    assert backend.ready and backend.state == "ready" and backend.status().state == "ready"
    items = [item async for item in backend.stream(HELLO, SHORT)]
    *texts, stats = items
    assert texts and all(isinstance(text, str) for text in texts), "text deltas first"
    assert isinstance(stats, Stats) and stats.generated_tokens >= 1 and stats.finish_reason in ("stop", "length")
    assert "".join(texts).strip(), "a reply has text"


async def test_a_reply_holds_one_chat_sequence_while_it_streams_and_gives_it_back(backend):
    held = []
    async for item in backend.stream(HELLO, SHORT):
        if isinstance(item, str) and not held:
            held.append(backend.status().chat_requests)
    assert held == [1] and backend.status().chat_requests == 0


async def test_abort_ends_the_reply_with_finish_reason_abort_and_what_was_written(backend):
    stream = backend.stream(HELLO, LONG, request_id="stop-me")
    texts, stats = [], None
    async for item in stream:
        if isinstance(item, Stats):
            stats = item
        else:
            texts.append(item)
            if len(texts) == 1:
                await backend.abort("stop-me")
    assert stats is not None and stats.finish_reason == "abort", stats
    assert texts and stats.generated_tokens < LONG.max_tokens, "the reply stopped early"
    assert backend.status().chat_requests == 0 and backend.ready, "and the engine goes on"


async def test_the_openai_app_is_there_exactly_where_the_backend_serves_the_api(backend):
    app = await backend.openai_app()
    assert (app is not None) == backend.serves_api
    if app is not None:
        assert backend.ready and callable(app), "an ASGI app over the started engine"


async def test_a_start_that_cannot_succeed_raises_a_chat_error_and_the_state_says_so(broken):
    with pytest.raises(ChatError) as info:
        await started(broken)
    assert str(info.value), "the error says what happened"
    assert not broken.ready and broken.state in ("failed", "unreachable")
    assert broken.status().chat_requests == 0
    async with broken.admit(CHAT):  # the admission still counts (and releases) while nothing runs
        assert broken.status().chat_requests == 1
