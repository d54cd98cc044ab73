"""The app as a client of a real `vllm serve` process (CHAT_ENGINE_URL): chat, Stop, a server that dies
and comes back, and two app processes sharing one server."""

import asyncio
import time

import httpx
import psutil
import pytest

from harness.chat_client import ChatClient
from harness.server import ChainlitServer
from harness.replies import stats_of, stop_a_long_reply
from harness.vllm_server import VllmServer, running_on


@pytest.fixture(scope="module")
def vllm_server(tiny_model, tmp_path_factory):
    server = VllmServer(str(tiny_model), tmp_path_factory.mktemp("vllm") / "serve.log").start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def remote_app(vllm_server, tmp_path_factory):
    app = ChainlitServer({"CHAT_ENGINE_URL": vllm_server.url},
                         tmp_path_factory.mktemp("remote-app") / "chainlit.log").start()
    yield app
    assert app.stop() == 0


@pytest.fixture
async def chat(remote_app):
    client = await ChatClient(remote_app.url).connect()
    yield client
    await client.close()


def engine_cpu_s(server: VllmServer) -> float:
    """CPU seconds the server's engine processes (its children) have spent: they grow while it generates, also
    when its web front is too busy to answer (on two CPU cores vLLM's front answers nothing, its metrics neither,
    until a long reply is generated)."""
    total = 0.0
    for proc in psutil.Process(server.proc.pid).children(recursive=True):
        try:
            times = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


async def test_a_chat_streams_from_the_remote_server_with_its_stats_and_status(chat, vllm_server, remote_app):
    reply = await chat.ask("Hello over there!")
    stats = stats_of(reply.content)
    assert stats["reply"] > 0 and stats["prompt"] > 0 and "tok/s" in reply.content
    assert reply.tokens, "the reply comes as stream events (that it streams over time: the Stop test below)"
    preset = next(w for w in chat.settings_widgets if w["id"] == "preset")
    assert preset["disabled"] and "owns its memory" in preset["description"]
    slider = next(w for w in chat.settings_widgets if w["id"] == "max_tokens")
    assert slider["max"] == 10240, "the slider follows the server's context, from its /v1/models"
    status = await chat.ask("/status")
    assert f"the vLLM server at {vllm_server.url}" in status.content and "| Context | 10240 tokens |" in status.content
    api = httpx.get(f"{remote_app.url}/v1/models", timeout=30)
    assert "max_model_len" not in api.text, "the server serves its own API; the app does not proxy it"


async def test_attachments_reach_the_server_and_its_tokenizer_cuts_a_long_one(chat):
    from test_attachments import ask_with, attach, numbered_lines

    await chat.change_settings({"max_tokens": 16})
    plain = stats_of((await chat.ask("What is in it?")).content)
    notes = await attach(chat, "notes.md", numbered_lines(30), "text/markdown")
    with_file = stats_of((await ask_with(chat, "What is in it?", [notes])).content)
    assert with_file["prompt"] > 2 * plain["prompt"] + plain["reply"] + 500, "the file's ~900 tokens were sent"
    log = await attach(chat, "server.log", numbered_lines(900), "text/plain")
    cut = await ask_with(chat, "Summarize the log.", [log])
    assert "server.log:" in cut.content and "tokens were left out" in cut.content, cut.content[-300:]
    assert stats_of(cut.content)["prompt"] <= 10240 - 16, "cut by the server's own /tokenize counts"


async def test_stop_aborts_the_request_on_the_server(chat, vllm_server):
    await chat.change_settings({"max_tokens": 8192})
    stopped = await stop_a_long_reply(chat, lambda: chat.send("Tell me a very long story."))
    assert stopped.content.split("*Stopped.*")[0], "the partial reply stays"
    for _ in range(50):  # the server's gauges follow its next engine step
        if running_on(vllm_server) == 0:
            break
        await asyncio.sleep(0.2)
    assert running_on(vllm_server) == 0, "the stopped request still runs on the server"


async def test_two_app_processes_chat_through_one_server_at_once(remote_app, vllm_server, tmp_path):
    second = ChainlitServer({"CHAT_ENGINE_URL": vllm_server.url}, tmp_path / "second.log").start()
    try:
        a, b = await ChatClient(remote_app.url).connect(), await ChatClient(second.url).connect()
        for client in (a, b):
            await client.change_settings({"max_tokens": 16})
            await client.ask("Hello")  # each app connects to the server on its first message
            await client.change_settings({"max_tokens": 1500})
        # Two long replies asked at once overlap as they arrive. On a busy 2-core machine the client can stand
        # still through both (see docs/reliability.md) and see them one after the other: ask again then; a
        # server that takes one app's request only after the other's reply fails all three tries.
        for _ in range(3):
            reply_a, reply_b = await asyncio.gather(a.ask("From the first app"), b.ask("From the second app"))
            lengths = stats_of(reply_a.content)["reply"], stats_of(reply_b.content)["reply"]
            assert min(lengths) > 0
            overlapped = reply_a.first_at < reply_b.last_at and reply_b.first_at < reply_a.last_at
            if overlapped or min(lengths) < 200:  # the random test model may end a reply early (its stop token)
                break
        assert overlapped or min(lengths) < 200, "the two apps' replies should overlap"
        await a.close()
        await b.close()
    finally:
        assert second.stop() == 0


async def test_a_server_killed_mid_reply_is_reported_and_the_app_recovers_when_it_is_back(chat, vllm_server):
    await chat.change_settings({"max_tokens": 8192})
    # The kill must come while the server generates the reply: one second of its engine's CPU time into it is a
    # few hundred of its 8,192 tokens. (Waiting for the reply's first text instead can be too late: on a busy
    # machine the server may send its first text once it has generated, and sent into socket buffers, the whole
    # reply, which no kill cuts any more.)
    for _ in range(3):
        for _ in range(3):  # the random test model may end its reply early
            busy = engine_cpu_s(vllm_server)
            await chat.send("Keep talking")
            await chat.wait_started(60)
            while engine_cpu_s(vllm_server) < busy + 1 and not chat.ended:
                await asyncio.sleep(0.05)
            if not chat.ended:
                break
        else:
            pytest.fail("in 3 tries the test model ended its reply within a second of generating")
        vllm_server.kill()
        await chat.wait_idle(60)
        shown = chat.all_text().split("Keep talking")[-1]
        if "reply tokens" not in shown:
            break
        # The whole reply came with its stats: the server had generated all of it before the kill (on a 2-core
        # machine the test's own timers can stand still while the server generates), so nothing was cut. Again.
        await asyncio.to_thread(vllm_server.start)
    else:
        pytest.fail("in 3 tries the server finished its whole reply before the test could kill it")
    assert "cannot be used" in shown and "CHAT_ENGINE_URL" in shown, \
        f"no error after a kill mid-reply: {shown[-300:]!r}"

    began = time.monotonic()
    down = await chat.ask("Are you there?", timeout=120)
    assert time.monotonic() - began < 60, "while the server is down a message must not hang"
    assert "cannot be used" in chat.all_text().split("Are you there?")[-1] or "cannot be used" in down.content

    await asyncio.to_thread(vllm_server.start)  # the same port, as a restarted server would be
    await chat.change_settings({"max_tokens": 32})
    for _ in range(15):  # the app notices by itself; a message also reconnects
        reply = await chat.ask("And now?")
        if "reply tokens" in reply.content:
            break
        await asyncio.sleep(2)
    assert stats_of(reply.content)["reply"] > 0
