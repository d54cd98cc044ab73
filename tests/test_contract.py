"""The engine's contract (engine/backend.py) as behaviour, one suite for every backend: the fake the UI's tests
use (harness/fake_engine.py) and the remote backend against a vLLM server imitated in memory (harness/fake_vllm.py)
in the fast tier; the embedded engine on the tiny model and the remote backend against a real `vllm serve` in the
slow one. Every method and property of the contract is used here on each: a backend that drifts from the others (a
stream that ends without its Stats, an abort that does not end the reply, a continuation that writes nothing, a
start that fails without saying so in its state, a property that can be set from outside) fails here under its
own name.
"""

import asyncio
import signal

import pytest

from engine.admission import API, CHAT
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
        refused = ChatError("The model could not be found.", "Set CHAT_MODEL.") if broken else None
        return FakeEngine(load_settings(), started=False, refuse_start=refused, deltas=[f" word{n}" for n in range(40)])
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
    async with broken.admit("ann", 1, CHAT):  # the admission still counts (and releases) while nothing runs
        assert broken.status().chat_requests == 1
    assert broken.status().chat_requests == 0


def test_the_contract_s_properties_are_read_only(fresh):
    properties = [name for name, member in vars(Backend).items() if isinstance(member, property)]
    assert {"preset_name", "preset", "state", "ready", "max_model_len", "admission"} <= set(properties)
    for name in properties:
        with pytest.raises(AttributeError):
            setattr(fresh, name, getattr(fresh, name))


async def test_continue_reply_goes_on_writing_the_partial_reply(backend):
    partial = [*HELLO, {"role": "assistant", "content": "Hello! How"}]
    *texts, stats = [item async for item in backend.stream(partial, SHORT, continue_reply=True, user="ann")]
    assert texts and "".join(texts).strip() and isinstance(stats, Stats) and stats.generated_tokens >= 1
    assert stats.finish_reason in ("stop", "length") and backend.status().chat_requests == 0


async def test_a_reply_stopped_by_its_chat_tells_its_cost_once_where_the_backend_can(backend):
    from engine.engine import ChatEngine

    first = asyncio.Event()

    async def reply():
        async for _ in backend.stream(HELLO, LONG, request_id="closed-by-its-chat"):
            first.set()

    task = asyncio.ensure_future(reply())
    await asyncio.wait_for(first.wait(), 120)
    task.cancel()  # what Chainlit's Stop does to the reply's task
    await asyncio.gather(task, return_exceptions=True)
    stopped = backend.stopped_stats("closed-by-its-chat")
    if isinstance(backend, ChatEngine):
        assert stopped is not None, "the embedded engine can tell what the stopped reply cost"
    assert stopped is None or (stopped.finish_reason == "abort" and 1 <= stopped.generated_tokens < LONG.max_tokens)
    assert backend.stopped_stats("closed-by-its-chat") is None, "read once"
    assert backend.stopped_stats("never-sent") is None
    await backend.abort("never-sent")  # an unknown request: nothing to stop, nothing raised
    assert backend.ready and backend.status().chat_requests == 0


async def test_count_tokens_counts_a_draft_by_the_models_tokenizer_and_nothing_before_a_start(fresh):
    before = fresh.state
    assert await fresh.count_tokens("Hello there") is None, "no tokenizer before a start: nothing is guessed"
    assert fresh.state == before and not fresh.ready, "counting starts nothing"
    await started(fresh)
    short, long = await fresh.count_tokens("Hello there"), await fresh.count_tokens("Hello there, " * 50)
    assert isinstance(short, int) and 0 < short < long, (short, long)
    assert long >= 50, "a long paste counts as long"


async def test_saturated_is_false_while_nothing_runs_and_true_once_every_slot_is_held(backend):
    assert backend.saturated() is False and backend.saturated("ann") is False
    if backend.preset is None:  # the slots are not known here (a server's queue, the fake's none)
        return
    async with backend.admit("ann", backend.preset.max_num_seqs, API):
        assert backend.saturated("bob") and backend.saturated()
    assert not backend.saturated()


async def test_switch_preset_refuses_an_unknown_or_locked_one_and_the_running_one_is_no_switch(backend):
    from engine.errors import ChatError

    running = backend.preset_name
    with pytest.raises(ChatError):
        await backend.switch_preset("no-such-preset")
    assert backend.ready and backend.preset_name == running, "a refused switch leaves the engine as it was"
    if backend.presets_locked is not None:
        with pytest.raises(ChatError):  # here not even the running one: the server chose its size
            await backend.switch_preset(running)
    else:
        told = []

        async def before_stop():
            told.append(backend.state)

        assert await backend.switch_preset(running, before_stop=before_stop) is False
        assert told == [] and backend.preset_name == running
    assert backend.ready and backend.state == "ready" and backend.max_model_len


async def test_preload_and_the_stop_signals_prepare_without_starting_and_keep_the_handlers_before(fresh):
    await asyncio.to_thread(fresh.preload)
    assert not fresh.ready
    before = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    called = []
    try:
        signal.signal(signal.SIGTERM, lambda signum, frame: called.append(signum))
        fresh.expect_stop_on_signals()
        signal.getsignal(signal.SIGTERM)(signal.SIGTERM, None)  # as the signal would: ours first, then the one before
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)
    assert called == [signal.SIGTERM], "the handler that was there still runs"
    assert not fresh.ready and fresh.status().state in STATES


async def test_shutdown_stops_what_it_started_and_is_safe_again_and_from_another_thread(fresh):
    await started(fresh)
    assert fresh.ready
    await asyncio.to_thread(fresh.shutdown)
    fresh.shutdown()
    assert fresh.status().state in STATES and fresh.status().chat_requests == 0
    if fresh.serves_api or fresh.presets_locked is None:  # what runs in this process is gone
        assert not fresh.ready and fresh.state == "stopped"
