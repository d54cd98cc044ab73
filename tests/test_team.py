"""A team on one server, through real servers: two app processes on one history (SQLite, and PostgreSQL), everyone
signed in with a password. Two users make their own API keys (the Keys chip, and scripts/add_user.py --key), and
the real `openai` client with each key, sent to either process, reads only its owner's library; a key is never in
the database in clear; a key revoked in one process is refused by the other at once; the tokens both used, in
chats and through the API, are counted to them and shown to each (their own only) and to the operator (everyone's,
the operator's CHAT_API_KEY among them)."""

import asyncio
import json
import re
import sqlite3
import subprocess
import sys
import time

import openai
import pytest

from harness.chat_client import ChatClient
from harness.postgres import PostgresServer, postgres_bin
from harness.presets import APP_PRESET
from harness.server import ROOT, ChainlitServer
from harness.stored import SECRET, add_user
from history.keys import digest

KEY = re.compile(r"chat-[A-Za-z0-9_-]{43}")
OPERATOR_KEY = "the-operators-own-key"
QUESTION = "How often should I descale the kettle?"


def every_value(database, sqlite_path) -> str:
    """Every row of every table of the history's database, as text."""
    if sqlite_path is not None:
        with sqlite3.connect(sqlite_path, timeout=30) as db:
            tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            return "\n".join(str(row) for table in tables for row in db.execute(f'SELECT * FROM "{table}"'))
    tables = database.query("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").split()
    return "\n".join(database.query(f'SELECT t::text FROM "{table}" t') for table in tables)


def usage_rows(database, sqlite_path) -> dict:
    """(user, source) -> (requests, prompt, cached, reply tokens), all days together."""
    sql = ('SELECT "user_identifier", "source", SUM("requests"), SUM("prompt_tokens"), SUM("cached_tokens"), '
           'SUM("reply_tokens") FROM chat_usage GROUP BY "user_identifier", "source"')
    if sqlite_path is not None:
        with sqlite3.connect(sqlite_path, timeout=30) as db:
            rows = db.execute(sql).fetchall()
    else:
        rows = [line.split("|") for line in database.query(sql).splitlines() if line]
    return {(user, source): tuple(int(n) for n in counts) for user, source, *counts in rows}


async def said(chat: ChatClient, text: str, command: str, files: list[str] = ()) -> str:
    """Send `text` beside a chip; what the app answered."""
    before = set(chat.messages)
    await chat.send(text, command=command, files=list(files))
    await chat.wait_idle()
    return "\n".join(m.content for m in chat.messages.values() if m.id not in before and m.type != "user_message")


async def add_document(chat: ChatClient, name: str, text: str) -> None:
    uploaded = await chat.upload(name, text.encode(), "text/plain")
    assert uploaded.status_code == 200, uploaded.text
    assert f"**{name}**" in await said(chat, "", "Library", [uploaded.json()["id"]])


async def until(condition, what: str, timeout: float = 60):
    """Polls `condition` (a busy machine writes late); fails naming what it waited for."""
    deadline = time.monotonic() + timeout
    while not (found := await condition()):
        assert time.monotonic() < deadline, f"waited {timeout:.0f} s for {what}"
        await asyncio.sleep(0.2)
    return found


def api(server: ChainlitServer, key: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0, timeout=300)


async def ask_library(server: ChainlitServer, key: str, model: str, library=True, stream=False):
    """A chat completion from the library through `server`; (the sources header, usage)."""
    client = api(server, key)
    request = dict(model=model, messages=[{"role": "user", "content": QUESTION}], max_tokens=6,
                   extra_body={"library": library, "ignore_eos": True})
    if stream:
        raw = await client.chat.completions.with_raw_response.create(
            **request, stream=True, stream_options={"include_usage": True})
        usage = [chunk.usage async for chunk in raw.parse() if chunk.usage][-1]
    else:
        raw = await client.chat.completions.with_raw_response.create(**request)
        usage = raw.parse().usage
    return raw.headers.get("x-library-sources", ""), usage


@pytest.fixture(params=["sqlite", "postgresql"])
def team(request, engine_env, tmp_path):
    """Two app processes on one history with sign-in (ada, bob, and carol the operator); bob's key made by the
    script."""
    database, sqlite_path = None, None
    if request.param == "postgresql":
        if postgres_bin() is None:
            pytest.skip("needs Debian's postgresql (scripts/setup.sh --dev installs it)")
        database = PostgresServer().start()
        env = {**engine_env, "CHAT_DATABASE_URL": database.url}
    else:
        sqlite_path = tmp_path / "chats.db"
        env = {**engine_env, "CHAT_HISTORY_DB": str(sqlite_path)}
    env = {**env, **SECRET, "CHAT_CUSTOM_PRESET": json.dumps(APP_PRESET), "CHAT_API_KEY": OPERATOR_KEY,
           "CHAT_ADMINS": "carol"}
    for name in ("ada", "bob", "carol"):
        add_user(env, name, f"{name}-password")
    made = subprocess.run([sys.executable, "scripts/add_user.py", "bob", "--key", "garden script"], cwd=ROOT,
                          env={**env}, capture_output=True, text=True, timeout=120)
    assert made.returncode == 0 and "shown only this once" in made.stdout, made.stderr
    bob_key = KEY.search(made.stdout).group()
    servers = [ChainlitServer(env, tmp_path / f"{name}.log", host="0.0.0.0").launch() for name in "ab"]
    try:
        yield [server.wait_answering() for server in servers], bob_key, database, sqlite_path
    finally:
        for server in servers:
            assert server.stop() == 0, f"see {server.log_path}"
        if database is not None:
            database.stop()


async def test_each_key_runs_as_its_user_in_every_process_and_each_users_usage_is_theirs(team, engine_env):
    (first, second), bob_key, database, sqlite_path = team
    model = engine_env["CHAT_MODEL"]
    ada = await ChatClient(first.url, "ada", "ada-password").connect()
    bob = await ChatClient(second.url, "bob", "bob-password").connect()
    await add_document(ada, "ada-kettle.txt", "Descale the kettle once a month with white vinegar.")
    await add_document(bob, "bob-kettle.txt", "Descale the kettle every week with citric acid.")

    assert "You have no API keys" in await said(ada, "", "Keys")
    shown = await said(ada, "new laptop script", "Keys")
    ada_key = KEY.search(shown).group()
    assert "shown only this once" in shown
    listed = await said(ada, "", "Keys")
    assert "| 1 | laptop script |" in listed and ada_key not in listed, "a key is shown once"
    stored = every_value(database, sqlite_path)
    for key in (ada_key, bob_key):
        assert key not in stored and key[5:] not in stored and digest(key) in stored, "only a hash is kept"

    used = {"ada": [0, 0, 0], "bob": [0, 0, 0]}  # requests, prompt and reply tokens the API's usage reported
    for user, key in (("ada", ada_key), ("bob", bob_key)):
        for server, stream in ((first, False), (second, True)):  # either process knows every key
            sources, usage = await ask_library(server, key, model, stream=stream)
            assert f"{user}-kettle.txt" in sources and ("bob" if user == "ada" else "ada") not in sources, sources
            used[user] = [used[user][0] + 1, used[user][1] + usage.prompt_tokens,
                          used[user][2] + usage.completion_tokens]
    with pytest.raises(openai.BadRequestError, match="No document in the library is named bob-kettle"):
        await ask_library(second, ada_key, model, library=["bob-kettle"])
    with pytest.raises(openai.BadRequestError, match="key names no user"):
        await ask_library(first, OPERATOR_KEY, model)
    await api(first, OPERATOR_KEY).completions.create(model=model, prompt="Hello", max_tokens=3)
    await ada.change_settings({"max_tokens": 8})
    await ada.ask("Hello from the chat")

    assert "Revoked **laptop script**" in await said(ada, "revoke 1", "Keys")
    with pytest.raises(openai.AuthenticationError, match="wrong, revoked or malformed"):
        await ask_library(second, ada_key, model)  # the other process refuses it at once
    with pytest.raises(openai.AuthenticationError, match="wrong, revoked or malformed"):
        await ask_library(first, ada_key[:-1], model)
    await ask_library(second, bob_key, model)  # bob's key is his still

    async def counted():
        rows = usage_rows(database, sqlite_path)
        return rows if rows.get(("bob", "api"), (0,))[0] == 3 and ("ada", "chat") in rows else None

    rows = await until(counted, "the usage of every request in the database")
    assert rows[("ada", "api")][0:2] == tuple(used["ada"][:2]) and rows[("ada", "api")][3] == used["ada"][2]
    assert rows[("ada", "chat")][0] == 1 and rows[("ada", "chat")][1] > 0 and rows[("ada", "chat")][3] > 0
    assert rows[("(CHAT_API_KEY)", "api")][0] == 1 and ("bob", "chat") not in rows
    mine = await said(ada, "", "Usage")
    assert "Your usage" in mine and f"| API | 2 | {used['ada'][1]:,} |" in mine and "| chat | 1 |" in mine
    theirs = await said(bob, "", "Usage")
    assert "| API | 3 |" in theirs and "| chat |" not in theirs, "bob sees his own only"
    carol = await ChatClient(first.url, "carol", "carol-password").connect()
    everyone = await said(carol, "", "Usage")
    assert "Everyone's usage" in everyone
    assert all(f"| {who} |" in everyone for who in ("ada", "bob", "(CHAT_API_KEY)")), everyone
    for chat in (ada, bob, carol):
        await chat.close()
