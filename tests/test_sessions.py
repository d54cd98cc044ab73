"""A chat lives as long as its session: a reply goes on through a reconnect, a tab back after a restart goes on in
its own thread, a chat deleted while its tab is open stays deleted. Real servers, the socket.io client as the
browser (it reconnects with its session id, as the browser does)."""

import asyncio
import json
import sqlite3
import time
from pathlib import Path

import httpx

from harness.chat_client import ChatClient
from harness.presets import APP_PRESET
from harness.server import ChainlitServer
from harness.replies import ask, stats_of
from harness.stored import stored_steps
from ui.sessions import DELETED_NOTICE
from ui.words import say


async def final_of(chat: ChatClient, reply_id: str, timeout: float = 300) -> str:
    """The reply's finished text (its cost line or its Stopped note), as the client received it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        shown = chat.messages.get(reply_id)
        if shown is not None and ("reply tokens" in shown.content or "*Stopped.*" in shown.content):
            return shown.content
        await asyncio.sleep(0.05)
    raise AssertionError(f"the reply did not finish within {timeout:.0f} s; the chat shows {chat.all_text()[-300:]!r}")


async def test_a_reply_goes_on_through_a_reconnect_of_its_session(app_server):
    chat = await ChatClient(app_server.url).connect()
    await chat.change_settings({"max_tokens": 4000})
    before = set(chat.messages)
    await chat.send("Tell me everything you know.")
    reply = await chat.streaming_reply(before)
    await chat.close()  # the connection drops mid-reply
    back = ChatClient(app_server.url)
    back.session_id = chat.session_id  # and comes back with its session, as the browser does
    await back.connect(wait_ready=False)
    try:
        final = await final_of(back, reply.id)  # the rest of the reply, or all of it if it ended meanwhile
    finally:
        await back.close()
    assert "*Stopped.*" not in final and stats_of(final)["reply"] > 0, final[-300:]
    assert final.startswith(reply.tokens[0][1]), "it is the same reply, not a new one"


async def test_a_chat_deleted_while_its_tab_is_open_stays_deleted_and_its_reply_stops(app_server):
    # Up to three tries: a busy machine can stall the server until the whole reply is made, and the delete then
    # comes after its end (nothing to stop); an abort that does not work lets every reply run to its end.
    for attempt in range(3):
        chat = await ChatClient(app_server.url).connect()
        try:
            await ask(chat, "Hello")
            thread_id = chat.thread_id
            await chat.change_settings({"max_tokens": 8000})
            before = set(chat.messages)
            await chat.send("Tell me everything you know.")
            reply = await chat.streaming_reply(before)
            async with httpx.AsyncClient(base_url=app_server.url, cookies={"access_token": await chat.sign_in()},
                                         timeout=120) as http:
                deleted = await http.request("DELETE", "/project/thread", json={"threadId": thread_id})
                assert deleted.status_code == 200, deleted.text
                final = await final_of(chat, reply.id)
                for _ in range(600):
                    if say(DELETED_NOTICE) in chat.ever_shown:
                        break
                    await asyncio.sleep(0.1)
                assert say(DELETED_NOTICE) in chat.ever_shown, "the tab is told why its reply stopped"
                await chat.close()  # Chainlit stores the session's metadata on its thread at the close
                await asyncio.sleep(3)
                with sqlite3.connect(Path(app_server.env["CHAT_HISTORY_DB"])) as db:
                    rows = db.execute("SELECT COUNT(*) FROM threads WHERE id = ?", (thread_id,)).fetchone()[0]
                assert rows == 0, "the deleted chat came back"
                assert (await http.get(f"/project/thread/{thread_id}")).status_code == 404
        finally:
            await chat.close()
        if "*Stopped.*" in final or stats_of(final)["reply"] < 8000:
            return
    raise AssertionError(f"each of 3 deleted chats' replies ran to its end: {final[-200:]!r}")


async def test_a_tab_back_after_a_restart_goes_on_in_its_own_thread(engine_env, tmp_path):
    env = {**engine_env, "CHAT_CUSTOM_PRESET": json.dumps(APP_PRESET), "CHAT_HISTORY_DB": str(tmp_path / "chats.db"),
           "CHAT_MAX_TOKENS": "32"}
    first = ChainlitServer(env, tmp_path / "first.log").start()
    try:
        chat = await ChatClient(first.url).connect()
        alone = stats_of(await ask(chat, "What is a cache?"))["prompt"]
        thread_id = chat.thread_id
        await chat.close()
    finally:
        assert first.stop() == 0
    second = ChainlitServer(env, tmp_path / "second.log", port=first.port).start()
    try:
        back = ChatClient(second.url)
        back.session_id = chat.session_id  # the open tab reconnects with its session and no thread id
        await back.connect()
        stats = stats_of(await ask(back, "What is a cache?"))
        assert stats["prompt"] > alone, f"the first turn was not in the prompt: {stats}, alone {alone}"
        await back.close()
        steps = stored_steps(tmp_path / "chats.db", thread_id)
        assert sum("What is a cache?" in step for step in steps) == 2, steps
        with sqlite3.connect(tmp_path / "chats.db") as db:
            assert db.execute("SELECT COUNT(*) FROM threads").fetchone()[0] == 1, "it did not split into a new chat"
    finally:
        assert second.stop() == 0
