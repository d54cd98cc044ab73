"""The chat app end to end: a real Chainlit server, the real engine, a socket.io client as the browser."""

import asyncio
import re

import httpx
import pytest

from harness.chat_client import ChatClient
from harness.presets import DEVICE
from harness.replies import nothing_running, stats_of, stop_a_long_reply


@pytest.fixture
async def client(app_server):
    chat = await ChatClient(app_server.url).connect()
    yield chat
    await chat.close()


async def test_first_chat_starts_the_engine_with_progress_and_the_reply_streams(client):
    first = await client.ask("Hello! Who are you?")
    # the question waited for the start the chat's opening began: the note showed its progress to the end, and
    # went once the reply came (the opening alone shows none, so the welcome page stays)
    assert any("Starting the model engine: Ready" in shown for shown in client.ever_shown)
    assert stats_of(first.content)["reply"] > 0 and "tok/s" in first.content
    # The pieces are counted on later, longer replies: on the 2-core test machine the server can stand still while
    # the engine generates (timers stopped for 17-23 s, docs/reliability.md), and a reply then arrives whole; streaming
    # must show in one of four replies (a server that does not stream fails all four)
    await client.change_settings({"max_tokens": 2048})
    tries = []
    for _ in range(4):
        reply = await client.ask("Tell me more.")
        tries.append((stats_of(reply.content)["reply"], len(reply.tokens)))
        if len(reply.tokens) >= 3:
            break
    else:
        pytest.fail(f"none of 4 replies streamed in several pieces (reply tokens, pieces): {tries}")
    stats = stats_of(reply.content)
    assert stats["reply"] > 100
    # batched every 40 ms, however fast the engine runs: at most one socket event per 40 ms of the reply
    seconds = stats["reply"] / float(re.search(r"(\d+) tok/s", reply.content).group(1))
    assert len(reply.tokens) <= seconds / 0.04 + 3, "tokens should be batched, not one socket event each"
    assert "tok/s" in reply.content and "first token" in reply.content


async def test_stop_ends_the_reply_in_the_engine_and_keeps_the_partial_text(client):
    first = await client.ask("Start")
    await client.change_settings({"max_tokens": 8192})
    stopped = await stop_a_long_reply(client, lambda: client.send("Tell me a very long story."))
    assert stopped.content.split("*Stopped.*")[0], "the partial reply must stay visible"
    # what the reply cost up to the Stop: its cost line counts the tokens written, the prompt's among them
    cost = stats_of(stopped.content)
    assert cost["reply"] >= 1 and cost["prompt"] > 0, stopped.content[-300:]
    await asyncio.sleep(0.5)
    assert "Task manually stopped" not in client.all_text() and client.all_text().count("*Stopped.*") == 1, \
        "one notice of the Stop, at the end of the reply"
    await nothing_running(client)
    await client.change_settings({"max_tokens": 32})
    follow_up = await client.ask("Go on")
    # the partial reply is part of the history the next prompt is built from (or, when a late Stop left
    # thousands of tokens, the next reply says what no longer fit the context)
    assert stats_of(follow_up.content)["prompt"] > stats_of(first.content)["prompt"] + 20 \
        or "left out" in follow_up.content


async def test_stop_also_ends_a_rerun_started_by_editing_a_message(client):
    await client.change_settings({"max_tokens": 16})
    question = await client.send("The original question")
    await client.wait_idle()
    await client.change_settings({"max_tokens": 8192})
    rerun = await stop_a_long_reply(client, lambda: client.edit(question, "The edited question, with a long answer"))
    assert "'max new tokens' limit" not in rerun.content and "filled the context" not in rerun.content, \
        "the rerun must end in the engine (finish reason abort), not run to its limit"
    await nothing_running(client)


async def test_settings_change_applies_to_the_next_message(client):
    await client.change_settings({"max_tokens": 16, "temperature": 0.2, "show_stats": True})
    reply = await client.ask("Short answer please")
    assert stats_of(reply.content)["reply"] == 16
    await client.change_settings({"show_stats": False})
    reply = await client.ask("No stats now")
    assert "tok/s" not in reply.content


async def test_out_of_range_settings_are_refused_with_a_message(client):
    await client.change_settings({"temperature": 7, "max_tokens": 16})
    await asyncio.sleep(0.5)
    assert "Settings not applied: temperature" in client.all_text()
    reply = await client.ask("still works?")
    assert stats_of(reply.content)["reply"] > 16, "refused settings must not be half-applied"


def steps_for_several(url: str) -> float:
    """Engine steps so far that made 2-8 tokens (a token for each of a few chats at once), from the app's /metrics:
    vLLM's histogram of tokens per engine step (absent until the engine first starts). One chat's reply alone
    makes 1 token a step."""
    from prometheus_client.parser import text_string_to_metric_families

    counts: dict[float, float] = {}
    for family in text_string_to_metric_families(httpx.get(f"{url}/metrics", timeout=60).text):
        if family.name.startswith("vllm:iteration_tokens"):
            for sample in family.samples:
                if sample.name.endswith("_bucket"):
                    bound = float(sample.labels["le"])
                    counts[bound] = counts.get(bound, 0) + sample.value
    return counts[8.0] - counts[1.0] if counts else 0.0


async def test_two_sessions_chat_at_the_same_time(app_server):
    """While session A's long reply streams, session B asks and gets its whole reply: served beside A, not after.

    Judged by the engine's own record (its steps that made a token for both), not by when the client saw the
    replies end: on the 2-core test machine the client can stand still through both (docs/reliability.md)."""
    a, b = await ChatClient(app_server.url).connect(), await ChatClient(app_server.url).connect()
    try:
        await a.change_settings({"max_tokens": 8192})
        await b.change_settings({"max_tokens": 200})
        shared = []
        for _ in range(3):  # the random test model may end A's reply early
            steps_before, before = steps_for_several(app_server.url), {m.id for m in a.replies()}
            # B asks right after A, not once A is seen streaming: the client may see that only at A's end
            await a.send("I am session A")
            reply_b = await b.ask("I am session B")
            long = await a.streaming_reply(before)
            assert stats_of(reply_b.content)["reply"] == 200
            assert long.id not in b.messages and reply_b.id not in a.messages, "each session sees only its own"
            shared.append(steps_for_several(app_server.url) - steps_before)
            if not a.ended:
                await a.stop()
            await a.wait_idle()
            if shared[-1] >= 100:  # B's tokens were made in the same engine steps as A's (alone: 0 such steps)
                return
        pytest.fail(f"in 3 tries session B's reply was not made beside session A's (steps for both: {shared})")
    finally:
        await a.close()
        await b.close()


async def test_preset_switch_rebuilds_the_engine_and_tells_the_other_chats(app_server):
    target = "4gb" if DEVICE == "cuda" else "cpu"  # a preset of the device it runs on (the sidebar offers no other)
    a, b = await ChatClient(app_server.url).connect(), await ChatClient(app_server.url).connect()
    try:
        await a.change_settings({"preset": target})
        assert f"Switching to '{target}': Ready" in a.all_text()
        await asyncio.sleep(0.5)
        assert f"The memory preset is now '{target}'" in b.all_text()
        status = await b.ask("/status")
        assert f"| Preset | {target}" in status.content and "| Context | 4096 tokens |" in status.content
        reply = await b.ask("Does it still answer?")
        assert stats_of(reply.content)["reply"] > 0
        await a.change_settings({"preset": "custom"})  # and back: later tests expect the test preset
        assert "Switching to 'custom': Ready" in a.all_text()
    finally:
        await a.close()
        await b.close()


async def test_a_watch_reload_keeps_the_running_engine_and_ctrl_c_ends_it_without_errors(engine_env, tmp_path):
    """`chainlit run app.py -w` re-imports the app on every save: the engine must not be rebuilt. Ctrl-C in
    that terminal, while a reply streams, ends the app and its engine with no error in the log."""
    import psutil

    from harness.server import ROOT, ChainlitServer

    server = ChainlitServer(engine_env, tmp_path / "chainlit.log", watch=True).start()
    probe = ROOT / "ui" / "_reload_probe.py"
    try:
        chat = await ChatClient(server.url).connect()
        await chat.change_settings({"max_tokens": 16})
        await chat.ask("before the reload")
        engines = {p.pid for p in psutil.Process(server.proc.pid).children(recursive=True)
                   if "EngineCore" in " ".join(p.cmdline())}
        probe.write_text('"""Written by a test to trigger a -w reload."""\n')
        for _ in range(600):
            await asyncio.sleep(0.1)
            if "Reloading app" in (tmp_path / "chainlit.log").read_text():
                break
        else:
            raise AssertionError("the app was not reloaded")
        await chat.close()
        chat = await ChatClient(server.url).connect()
        await chat.change_settings({"max_tokens": 16})
        reply = await chat.ask("after the reload", timeout=120)
        assert stats_of(reply.content)["reply"] == 16
        after = {p.pid for p in psutil.Process(server.proc.pid).children(recursive=True)
                 if "EngineCore" in " ".join(p.cmdline())}
        assert after == engines and len(engines) == 1, "the same engine process serves after the reload"
        await chat.change_settings({"max_tokens": 8192})
        for _ in range(3):  # the random test model may end a reply early: Ctrl-C must land while one streams
            before = {m.id for m in chat.replies()}
            await chat.send("a long reply, interrupted by Ctrl-C")
            await chat.streaming_reply(before)
            if not chat.ended:
                break
            await chat.wait_idle()
        interrupted_at = len((tmp_path / "chainlit.log").read_text())
        assert server.stop(timeout=60, ctrl_c=True) == 0
        after_ctrl_c = (tmp_path / "chainlit.log").read_text()[interrupted_at:]
        errors = [line for line in after_ctrl_c.splitlines() if "ERROR" in line or "Traceback" in line]
        assert not errors, f"Ctrl-C logged errors: {errors[:5]}"
        assert not any(psutil.pid_exists(pid) for pid in engines), "the engine process ends with the app"
    finally:
        probe.unlink(missing_ok=True)
        server.stop()


async def test_a_connection_open_while_the_engine_starts_still_ends_when_the_server_ends_it(engine_env, tmp_path):
    """A browser sends its next request (a chat's Regenerate, say) on an idle keep-alive connection: one that was
    in use while the engine's core was forked from the server must still be closed when the server closes it
    (uvicorn's keep-alive: 5 s idle), or the browser's request goes to a copy nobody reads and waits forever."""
    import json

    from harness.presets import APP_PRESET
    from harness.server import ChainlitServer

    server = ChainlitServer({**engine_env, "CHAT_CUSTOM_PRESET": json.dumps(APP_PRESET)},
                            tmp_path / "chainlit.log").start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)

        async def get() -> None:
            writer.write(b"GET /auth/config HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n")
            head = (await reader.readuntil(b"\r\n\r\n")).decode()
            assert head.startswith("HTTP/1.1 200"), head
            await reader.readexactly(int(re.search(r"(?i)content-length: (\d+)", head).group(1)))

        async def load_the_page() -> None:  # a page's requests, one a second, on one kept-alive connection
            while True:
                await get()
                await asyncio.sleep(1)

        loading = asyncio.create_task(load_the_page())
        chat = await ChatClient(server.url).connect()  # the chat's opening starts the engine: its core is forked
        await chat.ask("hello")
        await chat.close()
        loading.cancel()
        try:
            rest = await asyncio.wait_for(reader.read(), timeout=120)  # the keep-alive timer, on a busy machine
        except TimeoutError:
            raise AssertionError("the server's idle connection was never closed: the engine process holds a copy "
                                 "of it") from None
        assert rest == b"", "the server closes an idle connection without sending anything"
        writer.close()
    finally:
        assert server.stop() == 0
