"""Bad input to a real signed-in server (two users, SQLite), through the socket as a browser sends it: another user's
message id in a message, refused settings, imports with bad settings, an unanswered last question, deep nesting, a
Markdown title, and fuzzed files. What is checked is what a user would notice: the chat's words, the reopened chat,
what the history's file holds. The same checks without a server: tests/test_import_checks.py."""

import asyncio
import json
import random
import sqlite3
import time

import pytest

from harness.chat_client import ChatClient
from harness.import_fuzz import fuzzed_import
from harness.presets import APP_PRESET
from harness.replies import stats_of
from harness.server import ChainlitServer
from harness.stored import SECRET, add_user, step_texts

PIRATE = {"title": "Pirate chat", "sampling": {"temperature": 7, "max_tokens": 40},
          "messages": [{"role": "system", "content": "You are a pirate"}, {"role": "user", "content": "Ahoy?"},
                       {"role": "assistant", "content": "Arr."}]}


@pytest.fixture(scope="module")
def server(engine_env, tmp_path_factory):
    folder = tmp_path_factory.mktemp("bad-input")
    env = {**engine_env, "CHAT_CUSTOM_PRESET": json.dumps(APP_PRESET), "CHAT_HISTORY_DB": str(folder / "chats.db"),
           "CHAT_API": "false"}
    for name in ("alice", "bob"):
        add_user(env, name, f"{name}-password")
    started = ChainlitServer({**env, **SECRET}, folder / "chainlit.log", host="0.0.0.0").start()
    started.database = folder / "chats.db"
    yield started
    assert started.stop() == 0


def _query(server, sql: str, *args) -> list[tuple]:
    with sqlite3.connect(server.database, timeout=30) as db:
        return db.execute(sql, args).fetchall()


async def _until(condition, what: str, timeout: float = 120):
    """Polls `condition` (a busy machine writes late); fails naming `what` it waited for."""
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        assert time.monotonic() < deadline, f"waited {timeout:.0f} s for {what}"
        await asyncio.sleep(0.1)
    return found


def _widgets(client: ChatClient) -> dict:
    return {widget["id"]: widget["initial"] for widget in client.settings_widgets}


async def _import(client: ChatClient, data: bytes, name: str = "chat.json") -> str:
    """Import `data` as the Import command does; the notice it gives."""
    uploaded = await client.upload(name, data, "application/json")
    before = set(client.messages)
    await client.send("", command="Import", files=[uploaded.json()["id"]])
    await client.wait_idle()
    said = [m.content for key, m in client.messages.items() if key not in before and m.author != "User"]
    assert said, "the import said nothing"
    return said[-1]


def _opened_thread(notice: str) -> str:
    assert notice.startswith("✅ Imported"), notice
    return notice.split("/thread/")[1].split(")")[0]


async def test_a_message_carrying_another_users_message_id_is_refused_and_hers_stays_hers(server):
    alice = await ChatClient(server.url, "alice", "alice-password").connect()
    await alice.change_settings({"max_tokens": 16})
    uploaded = await alice.upload("notes.txt", b"alice's notes", "text/plain")
    her_id = await alice.send("Alice's question", files=[uploaded.json()["id"]])
    await alice.wait_idle()
    await _until(lambda: _query(server, 'SELECT 1 FROM steps WHERE id = ?', her_id), "alice's message stored")
    await alice.close()

    bob = await ChatClient(server.url, "bob", "bob-password").connect()
    uploaded = await bob.upload("notes.txt", b"bob's notes", "text/plain")
    await bob.send("Bob's words", files=[uploaded.json()["id"]], message_id=her_id)
    await bob.wait_idle()
    await _until(lambda: bob.thread_id and _query(server, 'SELECT 1 FROM steps WHERE "threadId" = ? AND type = ?',
                                                  bob.thread_id, "assistant_message"), "bob's reply stored")
    assert _query(server, 'SELECT "threadId", output FROM steps WHERE id = ?', her_id) == [
        (alice.thread_id, "Alice's question")], "her message stays in her chat with her words"
    assert _query(server, "SELECT thread_id, text FROM chat_attachments WHERE for_id = ?", her_id) == [
        (alice.thread_id, "alice's notes")], "her attachment keeps her text"
    assert "carries the id of a message in another chat" in bob.all_text(), "bob is told his message was not saved"
    await bob.close()
    again = await ChatClient(server.url, "alice", "alice-password", thread_id=alice.thread_id).connect()
    assert step_texts(again.resumed)[0] == ("user_message", "Alice's question")
    await again.close()


async def test_a_message_or_edit_over_the_sockets_1_mb_is_refused_by_its_size_and_the_chat_stays_as_it_was(server):
    refused = "Your message was 1.5 MB, more than the 1 MB one message can carry"
    chat = await ChatClient(server.url, "alice", "alice-password").connect()
    await chat.send("y" * 1_500_000)
    await chat.wait_idle()
    assert refused in chat.all_text()
    assert chat.sio.connected, "the chat's connection stays open"
    assert not chat.replies("ERNIE Chat"), "nothing was sent to the model"
    assert stats_of((await chat.ask("Hello")).content)["reply"] > 0, "the same connection answers the next message"
    hello = next(m.id for m in chat.messages.values() if m.content == "Hello")
    await _until(lambda: _query(server, "SELECT 1 FROM steps WHERE id = ?", hello), "the question stored")
    def finished_stored() -> bool:
        outputs = [output for (output,) in _query(server, 'SELECT output FROM steps WHERE "threadId" = ?',
                                                  chat.thread_id)]
        return any("reply tokens" in (o or "") for o in outputs) and not any("Cut off" in (o or "") for o in outputs)
    await _until(finished_stored, "the finished reply stored over its last save")
    steps = _query(server, 'SELECT id, output FROM steps WHERE "threadId" = ? ORDER BY "createdAt"', chat.thread_id)
    await chat.edit(hello, "z" * 1_500_000)
    await _until(lambda: chat.all_text().count(refused) == 2, "the edit refused in the chat")
    assert chat.sio.connected, "the chat's connection stays open after the edit"
    kept = _query(server, 'SELECT id, output FROM steps WHERE "threadId" = ? ORDER BY "createdAt"', chat.thread_id)
    assert [row for row in kept if row[0] in {i for i, _ in steps}] == steps, "the question and its reply stay"
    await chat.close()


async def test_a_refused_setting_is_neither_applied_nor_stored_and_a_bad_stored_one_costs_only_itself(server):
    chat = await ChatClient(server.url, "alice", "alice-password").connect()
    await chat.change_settings({"system_prompt": "Answer as a pirate.", "temperature": 0.3, "max_tokens": 16})
    await chat.ask("Hello")
    for refused, said in (({"temperature": 5}, "temperature"), ({"system_prompt": "x" * 900_000}, "the system prompt"),
                          ({"system_prompt": "x" * 1_200_000}, "the change was 1.2 MB")):  # over the socket's frame
        await chat.change_settings(refused)
        assert f"Settings not applied: {said}".lower() in chat.all_text().lower()
        assert _widgets(chat)["temperature"] == 0.3 and _widgets(chat)["system_prompt"] == "Answer as a pirate.", \
            "the sidebar shows the values in use again"
    await chat.change_settings({"max_tokens": 32})
    assert stats_of((await chat.ask("Once more")).content)["reply"] <= 32
    await chat.close()

    def stored():
        rows = _query(server, "SELECT metadata FROM threads WHERE id = ?", chat.thread_id)
        values = json.loads(rows[0][0] or "{}").get("chat_settings", {}) if rows else {}
        return values if values.get("max_tokens") == 32 else None

    values = await _until(stored, "the sidebar stored")
    assert values["temperature"] == 0.3 and values["system_prompt"] == "Answer as a pirate.", values
    reopened = await ChatClient(server.url, "alice", "alice-password", thread_id=chat.thread_id).connect()
    assert {k: _widgets(reopened)[k] for k in ("temperature", "system_prompt", "max_tokens")} == {
        "temperature": 0.3, "system_prompt": "Answer as a pirate.", "max_tokens": 32}
    await reopened.close()

    # a value that no longer passes (stored by an older version, or edited) falls back alone: on a chat that no
    # session holds, so that no tab's close writes its sidebar meanwhile
    kept = {**PIRATE, "sampling": {"temperature": 0.3, "max_tokens": 32}}
    importing = await ChatClient(server.url, "alice", "alice-password").connect()
    thread_id = _opened_thread(await _import(importing, json.dumps(kept).encode()))
    await importing.close()
    stored = json.loads(_query(server, "SELECT metadata FROM threads WHERE id = ?", thread_id)[0][0])
    stored["chat_settings"]["temperature"] = 5
    _query(server, "UPDATE threads SET metadata = ? WHERE id = ?", json.dumps(stored), thread_id)
    reopened = await ChatClient(server.url, "alice", "alice-password", thread_id=thread_id).connect()
    assert {k: _widgets(reopened)[k] for k in ("temperature", "system_prompt", "max_tokens")} == {
        "temperature": 0.8, "system_prompt": "You are a pirate", "max_tokens": 32}, "the bad value alone falls back"
    await reopened.close()


async def test_an_imports_bad_setting_is_left_out_and_said_and_its_good_ones_kept(server):
    chat = await ChatClient(server.url, "alice", "alice-password").connect()
    notice = await _import(chat, json.dumps(PIRATE).encode())
    assert "Left out" in notice and "temperature" in notice, notice
    await chat.close()
    named = _query(server, 'SELECT name FROM threads WHERE id = ?', _opened_thread(notice))
    assert named == [("Pirate chat (imported)",)], "an imported chat is told from its original in the history"
    opened = await ChatClient(server.url, "alice", "alice-password", thread_id=_opened_thread(notice)).connect()
    assert {k: _widgets(opened)[k] for k in ("temperature", "system_prompt", "max_tokens")} == {
        "temperature": 0.8, "system_prompt": "You are a pirate", "max_tokens": 40}
    await opened.close()


async def test_an_imported_chat_ending_with_a_question_keeps_it_in_the_prompt_and_the_export(server):
    chat = await ChatClient(server.url, "alice", "alice-password").connect()
    question = {"role": "user", "content": "Which ship is the fastest of the whole fleet, and why is it so fast?"}
    prompts = []
    for messages in (PIRATE["messages"][1:], [*PIRATE["messages"][1:], question]):
        thread_id = _opened_thread(await _import(chat, json.dumps(messages).encode()))
        opened = await ChatClient(server.url, "alice", "alice-password", thread_id=thread_id).connect()
        assert step_texts(opened.resumed)[-1][1] == messages[-1]["content"]
        await opened.change_settings({"max_tokens": 16})
        prompts.append(stats_of((await opened.ask("Go on")).content)["prompt"])
        await opened.send("", command="Export")
        await opened.wait_idle()
        exported = json.loads(await opened.download(next(e for e in opened.elements if e["name"].endswith(".json"))))
        assert [m["content"] for m in exported["messages"]][-3] == messages[-1]["content"], "exported as it was"
        await opened.close()
    assert prompts[1] > prompts[0] + 10, f"the unanswered question is in the prompt: {prompts}"
    await chat.close()


async def test_deep_nesting_a_markdown_title_and_fuzzed_files_get_a_clear_answer_and_the_chat_goes_on(server):
    chat = await ChatClient(server.url, "alice", "alice-password").connect()
    said = await _import(chat, b"[" * 50_000 + b"]" * 50_000)
    assert "Nothing was imported" in said and "nested too deeply" in said and "Something went wrong" not in said
    lines = "\n".join(json.dumps(m) for m in PIRATE["messages"][1:]).encode()
    assert (await _import(chat, lines, "chat.jsonl")).startswith("✅ Imported 2 messages")
    titled = await _import(chat, json.dumps({**PIRATE, "title": "![x](http://127.0.0.1:9/seen.png) **Ahoy**"}).encode())
    assert "![x](" not in titled and "\\!\\[x\\]" in titled, "the title is shown as text, never fetched as an image"
    rng = random.Random(51)
    for _ in range(6):
        data = fuzzed_import(rng)
        while len(data) > 1_000_000:  # Chainlit's upload refuses a larger file before the import sees it
            data = fuzzed_import(rng)
        said = await _import(chat, data)
        assert said.startswith("✅ Imported") or said.startswith("Nothing was imported"), said[:300]
    await chat.change_settings({"max_tokens": 16})
    assert stats_of((await chat.ask("Still there?")).content)["reply"] <= 16, "the chat still answers"
    await chat.close()
