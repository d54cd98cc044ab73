"""The library through a real server with sign-in, on SQLite and on PostgreSQL: a user adds a file with the Library
command, sees it listed, asks with "Answer from my library" on and gets the right passage in the prompt with its
source under the reply, picks a document with @name, and removes it; another user sees none of it; a bad file
is refused with nothing stored; a restart keeps the library; the list's Remove buttons remove by pointing. The
tiny model's words are gibberish, so what is judged is what the app put in the prompt (the question's stored
attachment) and what it shows."""

import asyncio
import json
from pathlib import Path

import pytest

from harness.chat_client import ChatClient
from harness.postgres import PostgresServer, postgres_bin
from harness.presets import APP_PRESET
from harness.server import ChainlitServer
from harness.stored import SECRET, add_user

LABELLED = json.loads((Path(__file__).parent / "data" / "library_set.json").read_text())
MANUAL = "\n\n".join(LABELLED["documents"]["kettle-manual.txt"]).encode()
PLANTS = "\n\n".join(LABELLED["documents"]["养花笔记.txt"]).encode()


async def command(chat: ChatClient, text: str = "", files: list[str] = ()) -> str:
    """Send the Library command; the text of what the app answered."""
    before = set(chat.messages)
    await chat.send(text, command="Library", files=list(files))
    await chat.wait_idle()
    return "\n".join(m.content for m in chat.messages.values() if m.id not in before and m.type != "user_message")


async def upload(chat: ChatClient, name: str, data: bytes, mime: str = "text/plain") -> str:
    uploaded = await chat.upload(name, data, mime)
    assert uploaded.status_code == 200, uploaded.text
    return uploaded.json()["id"]


def stored_prompt_text(database, sqlite_path) -> str:
    """Every question's stored attachment text (what went into the prompt besides the words)."""
    sql = "SELECT text FROM chat_attachments"
    if sqlite_path is not None:
        import sqlite3

        with sqlite3.connect(sqlite_path) as db:
            return "\n".join(row[0] for row in db.execute(sql))
    return database.query(sql)


@pytest.fixture(params=["sqlite", "postgresql"])
def history(request, engine_env, tmp_path):
    """A server's environment with sign-in (alice and bob) on either database."""
    if request.param == "postgresql":
        if postgres_bin() is None:
            pytest.skip("needs Debian's postgresql (scripts/setup.sh --dev installs it)")
        database = PostgresServer().start()
        env, sqlite_path = {**engine_env, "CHAT_DATABASE_URL": database.url}, None
    else:
        database, sqlite_path = None, tmp_path / "chats.db"
        env = {**engine_env, "CHAT_HISTORY_DB": str(sqlite_path)}
    env = {**env, **SECRET, "CHAT_CUSTOM_PRESET": json.dumps(APP_PRESET), "CHAT_API": "false"}
    add_user(env, "alice", "alice-password")
    add_user(env, "bob", "bob-password")
    yield env, database, sqlite_path
    if database is not None:
        database.stop()


async def test_a_users_library_answers_their_questions_with_sources_and_nobody_elses(history, tmp_path):
    env, database, sqlite_path = history
    server = ChainlitServer(env, tmp_path / "one.log", host="0.0.0.0").start()
    try:
        alice = await ChatClient(server.url, "alice", "alice-password").connect()
        await alice.change_settings({"max_tokens": 16})
        assert "Your library is empty" in await command(alice)

        bad = await upload(alice, "photo.txt", b"\x89PNG\r\n\x1a\n\x00\x00binary")
        refused = await command(alice, files=[bad])
        assert "Not added: photo.txt is not a text file" in refused
        assert "Your library is empty" in await command(alice), "a refused file leaves nothing behind"

        added = await command(alice, files=[await upload(alice, "kettle-manual.txt", MANUAL),
                                            await upload(alice, "养花笔记.txt", PLANTS)])
        assert "Added to your library: **kettle-manual.txt**" in added and "养花笔记.txt" in added
        listed = await command(alice)
        assert "| 1 | kettle-manual.txt |" in listed and "| 2 | 养花笔记.txt |" in listed

        await alice.change_settings({"library": True})
        reply = await alice.ask("How often should I descale the kettle?")
        assert "From your library: " in reply.content and "[1] kettle-manual.txt, passage 1" in reply.content
        assert any(element.get("name", "").startswith("[1] kettle-manual.txt") for element in alice.elements)
        assert "Descale the kettle once a month" in stored_prompt_text(database, sqlite_path)

        await alice.change_settings({"library": False})
        picked = await alice.ask("@养花 虎尾兰冬天多久浇一次水？")
        assert "[1] 养花笔记.txt" in picked.content and "kettle-manual" not in picked.content.split("From your")[-1]
        before = set(alice.messages)
        await alice.send("What does @nosuchdoc say?")
        await alice.wait_idle()
        told = "\n".join(m.content for m in alice.messages.values() if m.id not in before)
        assert "not sent to the model" not in told and "reply tokens" in told, "an @word naming no document is a word"
        plain = await alice.ask("How often should I descale the kettle?")
        assert "From your library" not in plain.content, "with the switch off and no @name, the library is not used"
        await alice.close()

        bob = await ChatClient(server.url, "bob", "bob-password").connect()
        await bob.change_settings({"max_tokens": 16, "library": True})
        assert "Your library is empty" in await command(bob), "bob does not see alice's documents"
        answer = await bob.ask("How often should I descale the kettle?")
        assert "From your library" not in answer.content
        await bob.close()
    finally:
        assert server.stop() == 0

    server = ChainlitServer(env, tmp_path / "two.log", host="0.0.0.0").start()  # a restart keeps the library
    try:
        alice = await ChatClient(server.url, "alice", "alice-password").connect()
        assert "| 1 | kettle-manual.txt |" in await command(alice)
        assert "Removed **kettle-manual.txt**" in await command(alice, "remove 1")
        assert "| 1 | 养花笔记.txt |" in await command(alice) and "kettle" not in await command(alice)
        assert "No document in your library is 'kettle'" in await command(alice, "remove kettle")
        await alice.close()
    finally:
        assert server.stop() == 0


async def test_the_api_answers_from_the_library_of_this_machines_user_on_loopback_and_says_why_not_elsewhere(
        engine_env, tmp_path):
    import openai

    env = {**engine_env, "CHAT_HISTORY_DB": str(tmp_path / "chats.db"), "CHAT_CUSTOM_PRESET": json.dumps(APP_PRESET)}
    server = ChainlitServer(env, tmp_path / "loopback.log").start()
    try:
        chat = await ChatClient(server.url).connect()
        assert "Added to your library" in await command(chat, files=[await upload(chat, "kettle-manual.txt", MANUAL)])
        await chat.close()
        api = openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key="unused-on-loopback", max_retries=0, timeout=300)
        asked = [{"role": "user", "content": "How often should I descale the kettle?"}]
        plain = await api.chat.completions.create(model=env["CHAT_MODEL"], max_tokens=4, messages=asked)
        raw = await api.chat.completions.with_raw_response.create(
            model=env["CHAT_MODEL"], max_tokens=4, messages=asked, extra_body={"library": ["kettle"]})
        assert raw.headers["x-library-sources"].startswith("[1] kettle-manual.txt, passage 1")
        answered = raw.parse()
        assert answered.usage.prompt_tokens > plain.usage.prompt_tokens + 50, "the passages went into the prompt"
        assert answered.model_extra["library_sources"][0].startswith("[1] kettle-manual.txt, passage 1"), \
            "the sources reach the openai client in the body too"
        summary = await api.chat.completions.create(  # names the document, matches none of its words
            model=env["CHAT_MODEL"], max_tokens=4, messages=[{"role": "user", "content": "Summarise this document"}],
            extra_body={"library": ["kettle"]})
        assert summary.model_extra["library_sources"], "a named document answers from its opening passages"
        assert "opening passages" in summary.model_extra["library_note"], summary.model_extra
        stream = await api.chat.completions.create(model=env["CHAT_MODEL"], max_tokens=4, messages=asked,
                                                   stream=True, extra_body={"library": ["kettle"]})
        chunks = [chunk async for chunk in stream]
        assert chunks[0].model_extra["library_sources"][0].startswith("[1] kettle-manual.txt"), "and in a stream"
        with pytest.raises(openai.BadRequestError, match="No document in the library is named nothing"):
            await api.chat.completions.create(model=env["CHAT_MODEL"], max_tokens=4, messages=asked,
                                              extra_body={"library": ["nothing"]})
        with pytest.raises(openai.BadRequestError, match="must be true"):
            await api.chat.completions.create(model=env["CHAT_MODEL"], max_tokens=4, messages=asked,
                                              extra_body={"library": "all of it"})
    finally:
        assert server.stop() == 0


REMOVE = "library_remove"


async def until(condition, within_s: float = 60) -> None:
    """Wait for what the socket tells: its events may come after the action's HTTP answer."""
    for _ in range(int(within_s / 0.05)):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the chat did not show what the button did")


async def press(chat: ChatClient, action: dict) -> str:
    """Press a button; the text of what the app answered (a message, once the socket has brought it)."""
    before = set(chat.messages)
    pressed = await chat.click(action)
    assert pressed.status_code == 200, pressed.text
    await until(lambda: any(m.content for m in chat.messages.values() if m.id not in before))
    return "\n".join(m.content for m in chat.messages.values() if m.id not in before)


async def test_each_listed_document_has_a_remove_button_that_removes_it(engine_env, tmp_path):
    env = {**engine_env, "CHAT_HISTORY_DB": str(tmp_path / "chats.db"), "CHAT_CUSTOM_PRESET": json.dumps(APP_PRESET),
           "CHAT_API": "false"}
    server = ChainlitServer(env, tmp_path / "chainlit.log").start()
    try:
        chat = await ChatClient(server.url).connect()
        try:
            added = await command(chat, files=[await upload(chat, "kettle-manual.txt", MANUAL),
                                               await upload(chat, "养花笔记.txt", PLANTS)])
            assert "Added to your library" in added, added
            listed = await command(chat)
            buttons = [a for a in chat.actions if a["name"] == REMOVE]
            assert [b["label"] for b in buttons] == ["Remove 1: kettle-manual.txt", "Remove 2: 养花笔记.txt"], listed
            kettle = buttons[0]

            asked = await press(chat, kettle)  # a slip of the pointer removes nothing: Remove asks first
            assert "Remove **kettle-manual.txt** from your library?" in asked, asked
            assert "| 1 | kettle-manual.txt |" in await command(chat), "removed before the user said yes"
            sure = chat.action("library_remove_confirmed")
            assert sure and sure["label"] == "Yes, remove kettle-manual.txt", chat.actions
            assert "Removed **kettle-manual.txt**" in await press(chat, sure)
            await until(lambda: kettle not in chat.actions and sure not in chat.actions)  # its buttons go
            assert buttons[1] in chat.actions, "the other document's button went too"
            now = await command(chat)
            assert "| 1 | 养花笔记.txt |" in now and "kettle" not in now, now

            again = await press(chat, kettle)  # a stale button (an older list on another tab)
            assert "no longer in your library" in again, again
            assert "| 1 | 养花笔记.txt |" in await command(chat), "a stale button removed another document"

            newer = PLANTS + "\n\n绿萝每周浇一次水。".encode()  # the same file, added again after a change
            replaced = await command(chat, files=[await upload(chat, "养花笔记.txt", newer)])
            assert "in place of the earlier copy" in replaced, replaced
            listed = await command(chat)
            assert listed.count("养花笔记.txt |") == 1 and f"{len(newer) / 1024:.1f} KB" in listed, listed
        finally:
            await chat.close()
    finally:
        assert server.stop() == 0


async def test_a_regenerated_answer_from_the_library_names_the_same_sources(engine_env, tmp_path):
    env = {**engine_env, "CHAT_HISTORY_DB": str(tmp_path / "chats.db"), "CHAT_CUSTOM_PRESET": json.dumps(APP_PRESET),
           "CHAT_API": "false"}
    server = ChainlitServer(env, tmp_path / "chainlit.log").start()
    try:
        chat = await ChatClient(server.url).connect()
        try:
            added = await command(chat, files=[await upload(chat, "kettle-manual.txt", MANUAL)])
            assert "Added to your library" in added, added
            await chat.change_settings({"max_tokens": 16, "library": True})
            first = await chat.ask("How often should I descale the kettle?")
            assert "[1] kettle-manual.txt, passage 1" in first.content, first.content
            await until(lambda: (chat.action("regenerate_reply") or {}).get("forId") == first.id)
            await chat.click(chat.action("regenerate_reply"))

            def regenerated():
                return [m for m in chat.replies("ERNIE Chat") if m.id != first.id and "reply tokens" in m.content]
            await until(lambda: first.id not in chat.messages and regenerated())
            again = regenerated()[-1]
            assert "From your library: " in again.content, again.content
            assert "[1] kettle-manual.txt, passage 1" in again.content, again.content
            # the passage beside the new answer: the socket brings elements after their message
            await until(lambda: any(e.get("forId") == again.id and e.get("name", "").startswith("[1] kettle-manual")
                                    for e in chat.elements))
        finally:
            await chat.close()
    finally:
        assert server.stop() == 0
