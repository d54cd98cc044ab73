"""Chats that survive a restart, a killed server and a full disk; PostgreSQL shared by two app processes;
sign-in off loopback. Real servers, a real SQLite file and a real PostgreSQL, the socket.io client as the browser."""

import asyncio
import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import time

import httpx
import psutil
import pytest
import socketio

from harness.chat_client import ChatClient, SignInRefused
from harness.presets import APP_PRESET
from harness.postgres import PostgresServer, postgres_bin
from harness.server import ChainlitServer
from harness.replies import stats_of
from harness.stored import CUT_OFF, SECRET, add_user, step_texts, stored_steps

async def listed_threads(url: str, token_client: ChatClient) -> list[str]:
    """The names the history sidebar lists for the signed-in user (Chainlit's own endpoint)."""
    token = await token_client.sign_in()
    async with httpx.AsyncClient(base_url=url, cookies={"access_token": token}, timeout=120) as http:
        response = await http.post("/project/threads", json={"pagination": {"first": 20}, "filter": {}})
    assert response.status_code == 200, response.text
    return [thread["name"] for thread in response.json()["data"]]


async def test_a_chat_survives_a_restart_and_a_reply_cut_by_kill_9_keeps_what_was_shown(engine_env, tmp_path):
    env = {**engine_env, "CHAT_CUSTOM_PRESET": json.dumps(APP_PRESET), "CHAT_HISTORY_DB": str(tmp_path / "chats.db")}
    first = ChainlitServer(env, tmp_path / "first.log").start()
    try:
        chat = await ChatClient(first.url).connect()
        await chat.change_settings({"max_tokens": 24, "temperature": 0.3})
        one = await chat.ask("What is a cache?")
        two = await chat.ask("And a prefix cache?")
        database = tmp_path / "chats.db"
        for _ in range(3):  # each try a new chat: the random test model may end a reply before it is saved
            long = await ChatClient(first.url).connect()
            await long.change_settings({"max_tokens": 8192})
            await long.send("Tell me everything you know.")
            await long.wait_started()
            # The server saves a streaming reply once a second, marked as cut off. Once such a save is in the file
            # the server is stopped (SIGSTOP: nothing more is shown or saved), then killed. Waiting for the reply to
            # stream first can be too late: on a busy machine a whole reply can arrive, and be saved, at once.
            def saved_while_streaming() -> bool:
                return any(out.endswith(CUT_OFF) for out in stored_steps(database, long.thread_id))

            deadline = time.monotonic() + 300
            while not long.ended and time.monotonic() < deadline and not saved_while_streaming():
                await asyncio.sleep(0.05)
            os.kill(first.proc.pid, signal.SIGSTOP)
            if saved_while_streaming():
                await asyncio.sleep(1)  # what the server sent before it stopped reaches the client
                seen_at_kill = long.replies("ERNIE Chat")[-1].content if long.replies("ERNIE Chat") else ""
                break
            os.kill(first.proc.pid, signal.SIGCONT)
            await long.wait_idle()
            await long.close()
        else:
            pytest.fail("in 3 tries the long reply had ended before it was saved while streaming")
        engine = psutil.Process(first.proc.pid).children(recursive=True)
        os.killpg(first.proc.pid, signal.SIGKILL)
    finally:
        first.stop()
    gone, alive = psutil.wait_procs(engine, timeout=60)
    assert not alive, f"the engine's processes must end with a killed app (no memory held): {alive}"
    with sqlite3.connect(tmp_path / "chats.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)

    second = ChainlitServer(env, tmp_path / "second.log").start()
    try:
        resumed = await ChatClient(second.url, thread_id=chat.thread_id).connect()
        assert step_texts(resumed.resumed) == [("user_message", "What is a cache?"), ("assistant_message", one.content),
                                               ("user_message", "And a prefix cache?"),
                                               ("assistant_message", two.content)]
        widgets = {w["id"]: w["initial"] for w in resumed.settings_widgets}
        assert widgets["max_tokens"] == 24 and widgets["temperature"] == 0.3, "the chat's sidebar comes back"
        three = await resumed.ask("Go on")
        assert stats_of(three.content)["reply"] == 24
        earlier = stats_of(two.content)
        assert stats_of(three.content)["prompt"] > earlier["prompt"] + earlier["reply"], \
            "the old turns are in the prompt"
        await resumed.close()
        # reopened again on this server: the old turns are still in the prefix cache
        again = await ChatClient(second.url, thread_id=chat.thread_id).connect()
        four = await again.ask("Once more")
        assert stats_of(four.content)["cached"] >= stats_of(three.content)["prompt"] // 2

        cut = await ChatClient(second.url, thread_id=long.thread_id).connect()
        (asked, question), (replied, stored) = step_texts(cut.resumed)
        assert (asked, question) == ("user_message", "Tell me everything you know.")
        assert stored.endswith(CUT_OFF), "a reply cut by the crash says so"
        kept = stored.removesuffix(CUT_OFF).rstrip()
        assert kept and (seen_at_kill.startswith(kept) or kept.startswith(seen_at_kill.rstrip())), \
            "it keeps what was streamed to the user (saved once a second)"
        await cut.change_settings({"max_tokens": 16})
        assert stats_of((await cut.ask("Continue")).content)["reply"] == 16, "and the chat goes on"
        assert set(await listed_threads(second.url, cut)) >= {"What is a cache?", "Tell me everything you know."}
        for client in (again, cut):
            await client.close()
    finally:
        assert second.stop() == 0


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB file system for the history, to fill up; skipped where mounting is not allowed."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small file system here: {mounted.stderr.decode().strip()}")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk) -> None:
    # Unbuffered: a buffered file keeps the bytes a partial write left over and fails again on close.
    with open(disk / "filler", "wb", buffering=0) as filler:
        with contextlib.suppress(OSError):
            while True:
                filler.write(b"\0" * 65536)


async def test_a_full_disk_is_said_once_and_the_chat_goes_on(engine_env, small_disk, tmp_path):
    server = ChainlitServer({**engine_env, "CHAT_HISTORY_DB": str(small_disk / "chats.db")}, tmp_path / "log").start()
    try:
        chat = await ChatClient(server.url).connect()
        await chat.change_settings({"max_tokens": 256})
        await chat.ask("Saved")
        fill(small_disk)
        for i in range(3):
            await chat.ask(f"Not saved {i}")
        # the notice may come after a reply has begun (which write fails first varies): read the model's replies
        replies = chat.replies("ERNIE Chat")[-3:]
        assert all(stats_of(reply.content)["reply"] == 256 for reply in replies), "the chat goes on"
        assert chat.all_text().count("This chat could not be saved") == 1, "said once, not per message"
        assert "disk is full" in chat.all_text(), "with the database's reason"
        (small_disk / "filler").unlink()
        await chat.ask("Saved again")
        await asyncio.sleep(2)
        with sqlite3.connect(small_disk / "chats.db") as db:
            asked = {row[0] for row in db.execute("SELECT output FROM steps WHERE type = 'user_message'")}
        assert {"Saved", "Saved again"} <= asked, "saving resumes by itself once there is room"
        await chat.close()
    finally:
        assert server.stop() == 0


@pytest.mark.skipif(postgres_bin() is None, reason="needs Debian's postgresql (scripts/setup.sh --dev installs it)")
async def test_two_app_processes_share_a_postgresql_history_and_each_user_sees_only_their_own(engine_env, tmp_path):
    database = PostgresServer().start()
    env = {**engine_env, "CHAT_DATABASE_URL": database.url, "CHAT_API": "false"}
    servers = []
    try:
        refused = ChainlitServer(env, tmp_path / "no-secret.log", host="0.0.0.0")
        with pytest.raises(RuntimeError, match="chainlit exited with 1"):
            refused.start()
        assert "CHAINLIT_AUTH_SECRET" in (tmp_path / "no-secret.log").read_text()

        assert "can sign in now" in add_user(env, "alice", "alice-password")
        add_user(env, "bob", "bob-password")
        assert "alice-password" not in database.query("SELECT hash FROM chat_logins"), "only hashes are stored"
        servers = [ChainlitServer({**env, **SECRET}, tmp_path / f"{name}.log", host="0.0.0.0").start()
                   for name in ("one", "two")]
        one, two = (server.url for server in servers)

        with pytest.raises(SignInRefused):
            await ChatClient(one, "alice", "wrong-password").connect()
        with pytest.raises(socketio.exceptions.ConnectionError):  # off loopback nobody chats unsigned
            await ChatClient(one).connect()

        alice = await ChatClient(one, "alice", "alice-password").connect()
        await alice.change_settings({"max_tokens": 16})
        reply = await alice.ask("Hello from alice")
        for _ in range(60):  # Chainlit writes the finished reply in a task of its own: wait until it is stored
            stored = database.query("SELECT count(*) FROM steps WHERE name = 'ERNIE Chat'").strip()
            if stored == "1":
                break
            await asyncio.sleep(0.5)
        on_two = await ChatClient(two, "alice", "alice-password", thread_id=alice.thread_id).connect()
        assert step_texts(on_two.resumed) == [("user_message", "Hello from alice"),
                                              ("assistant_message", reply.content)]
        assert await listed_threads(two, on_two) == ["Hello from alice"]

        bob = ChatClient(two, "bob", "bob-password")
        assert await listed_threads(two, bob) == [], "bob's history does not list alice's chat"
        token = await bob.sign_in()
        async with httpx.AsyncClient(base_url=two, cookies={"access_token": token}, timeout=60) as http:
            asked = await http.get(f"/project/thread/{alice.thread_id}")
        assert asked.status_code in (401, 403, 404), "asking for alice's thread by id is refused"
        with pytest.raises(socketio.exceptions.ConnectionError):
            await ChatClient(two, "bob", "bob-password", thread_id=alice.thread_id).connect()
        for client in (alice, on_two):
            await client.close()
        stored = database.query('SELECT count(*) FROM steps WHERE type = \'user_message\'').strip()
        assert stored == "1"
    finally:
        for server in servers:
            server.stop()
        database.stop()


async def test_history_off_keeps_chats_in_memory_and_asks_nobody_to_sign_in(engine_env, tmp_path):
    env = {**engine_env, "CHAT_HISTORY": "false", "CHAT_HISTORY_DB": str(tmp_path / "none.db")}
    server = ChainlitServer(env, tmp_path / "log").start()
    try:
        chat = await ChatClient(server.url).connect()
        assert await chat.sign_in() is None, "no sign-in without a history"
        await chat.close()
        assert not (tmp_path / "none.db").exists()
    finally:
        assert server.stop() == 0
