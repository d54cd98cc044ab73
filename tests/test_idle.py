"""When nobody chats the engine gives its memory back (on the CPU it stops, having no sleep mode) and the next
chat message or API request wakes it: the idle timer, a message while it falls asleep, Stop during the wake, a
long reply that keeps it awake, what the status says, and, through a real server, the chat's waking note, an
API request that wakes it and /metrics that does not. CHAT_IDLE_MINUTES is a fraction of a minute here."""

import asyncio
import json
import time

import httpx
import openai
import pytest

from engine.engine import ChatEngine
from engine.settings import Sampling, load_settings
from harness import replies
from harness.chat_client import ChatClient
from harness.presets import APP_PRESET
from harness.server import ChainlitServer
from ui.text import status_text

IDLE_MINUTES = 0.05  # 3 s
ASLEEP_WITHIN_S = 60  # the idle time, a check, and the engine's stop on a busy machine


async def _started(engine_env, idle_minutes: float):
    # the app's context (10,240): a reply of 8,000 tokens outlasts the idle time also on a fast processor (1,500
    # tokens of the test model took 2.2 s on one, under the 3 s it must outlast)
    settings = load_settings(model=engine_env["CHAT_MODEL"], preset="custom", custom_preset=APP_PRESET,
                             idle_minutes=idle_minutes)
    engine = ChatEngine(settings)
    await engine.ensure_started()
    return engine


@pytest.fixture
async def idle_engine(engine_env):
    """An engine whose idle timer runs (3 s), for one test: kept for the module, its timer stopped its engine
    while another test's engine was being built in this process, and that build failed ("Engine core
    initialization failed", no core process ended) just as the other engine stopped. The app runs one engine a
    process; two starting and stopping at once in one process is the test's own doing."""
    engine = await _started(engine_env, IDLE_MINUTES)
    yield engine
    engine.shutdown()


@pytest.fixture(scope="module")
async def sleepy_engine(engine_env):
    """An engine put to sleep only when a test says so (its timer off), so no timer races the test's own steps."""
    engine = await _started(engine_env, 0)
    yield engine
    engine.shutdown()


async def reply(engine, text="Hello", max_tokens=8) -> str:
    pieces = []
    async for item in engine.stream([{"role": "user", "content": text}], Sampling(max_tokens=max_tokens,
                                                                                  ignore_eos=True)):
        if isinstance(item, str):
            pieces.append(item)
    return "".join(pieces)


async def until(condition, timeout: float = ASLEEP_WITHIN_S, what: str = "") -> None:
    await replies.until(condition, timeout, what)


async def test_an_idle_engine_sleeps_says_so_and_the_next_message_wakes_it(idle_engine):
    await reply(idle_engine)
    await until(lambda: idle_engine.status().state == "asleep", what="asleep")
    status = idle_engine.status()
    assert status.asleep_since is not None and idle_engine.host is None, "a CPU engine asleep holds no process"
    assert "asleep since" in status_text(status) and "the next message wakes it" in status_text(status)
    assert await reply(idle_engine), "the message that woke the engine got no reply"
    assert idle_engine.status().state in ("ready", "asleep")


async def test_a_message_while_the_engine_falls_asleep_is_answered(sleepy_engine):
    await sleepy_engine.ensure_started()
    falling = asyncio.ensure_future(sleepy_engine.fall_asleep())
    await asyncio.sleep(0)  # the engine has taken its lock and begun to fall asleep
    answer = await reply(sleepy_engine)
    assert await falling is True, "the engine did not fall asleep"
    assert answer, "a message sent while the engine fell asleep got no reply"


async def test_stop_during_the_wake_ends_that_reply_and_the_engine_still_wakes(sleepy_engine):
    await sleepy_engine.ensure_started()
    assert await sleepy_engine.fall_asleep()
    waiting = asyncio.ensure_future(reply(sleepy_engine))
    await until(lambda: sleepy_engine.state == "waking", timeout=30, what="waking")
    waiting.cancel()  # what Chainlit does to the reply's task on Stop
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await sleepy_engine.ensure_started()  # the wake went on for whoever comes next
    assert sleepy_engine.ready and sleepy_engine.streaming == 0
    assert await reply(sleepy_engine)


async def test_a_reply_longer_than_the_idle_time_keeps_the_engine_awake(idle_engine):
    await idle_engine.ensure_started()
    began = time.monotonic()
    streaming = asyncio.ensure_future(reply(idle_engine, "Tell a long story.", max_tokens=8000))
    while not streaming.done():
        assert idle_engine.asleep_since is None, "the engine fell asleep in the middle of a reply"
        await asyncio.sleep(0.1)
    assert await streaming
    assert time.monotonic() - began > IDLE_MINUTES * 60, "the reply was shorter than the idle time: no test"


async def test_through_the_app_a_chat_wakes_it_with_a_note_an_api_request_wakes_it_and_metrics_do_not(
        engine_env, tmp_path):
    env = {**engine_env, "CHAT_CUSTOM_PRESET": json.dumps(APP_PRESET), "CHAT_IDLE_MINUTES": str(IDLE_MINUTES)}
    server = ChainlitServer(env, tmp_path / "chainlit.log").start()
    try:
        chat = await ChatClient(server.url).connect()
        assert (await chat.ask("Hello")).content
        await _until_asleep(chat)
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
            assert (await http.get("/metrics")).status_code == 200
        assert "asleep" in (await _status(chat)), "reading /metrics woke the engine"

        answer = await chat.ask("Hello again")
        assert answer.content, "the message that woke the engine got no reply"
        assert any("Waking the model engine" in shown for shown in chat.ever_shown), chat.all_text()[-1500:]

        await _until_asleep(chat)
        api = openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key="unused-on-loopback", max_retries=0,
                                 timeout=300)
        completion = await api.chat.completions.create(model=engine_env["CHAT_MODEL"], max_tokens=8,
                                                       messages=[{"role": "user", "content": "Hi"}])
        assert completion.choices[0].message.content, "the API request that woke the engine got no reply"
        await chat.close()
    finally:
        assert server.stop() == 0
    assert server.log_path.read_text().count("the engine sleeps after") >= 2


async def _status(chat: ChatClient) -> str:
    return (await chat.ask("/status")).content


async def _until_asleep(chat: ChatClient) -> None:
    deadline = time.monotonic() + ASLEEP_WITHIN_S
    while "asleep since" not in (text := await _status(chat)):
        assert time.monotonic() < deadline, f"the engine did not fall asleep: {text}"
        await asyncio.sleep(1)


async def test_a_preset_switch_while_asleep_starts_the_new_preset(sleepy_engine):
    await sleepy_engine.ensure_started()
    assert await sleepy_engine.fall_asleep()
    assert await sleepy_engine.switch_preset("cpu"), "the switch did nothing to a sleeping engine"
    assert sleepy_engine.ready and sleepy_engine.asleep_since is None and sleepy_engine.preset.name == "cpu"
    assert await reply(sleepy_engine)
