"""Export all, through a real server with a real SQLite history and two signed-in users: the button under the Export
chip's answer gives one zip holding each of the user's chats as Markdown and JSON, and none of the other user's."""

import asyncio
import io
import json
import time
import zipfile

import pytest

from harness.chat_client import ChatClient
from harness.presets import APP_PRESET
from harness.server import ChainlitServer
from harness.stored import SECRET, add_user
from history import exchange

ADA = ("How do I descale a kettle?", "Which tea suits the morning?")
BOB = "Where did I park the bicycle?"


@pytest.fixture
def signed_in_server(engine_env, tmp_path):
    env = {**engine_env, **SECRET, "CHAT_CUSTOM_PRESET": json.dumps(APP_PRESET),
           "CHAT_HISTORY_DB": str(tmp_path / "chats.db")}
    for name in ("ada", "bob"):
        add_user(env, name, f"{name}-password")
    server = ChainlitServer(env, tmp_path / "server.log", host="0.0.0.0").start()
    try:
        yield server
    finally:
        assert server.stop() == 0, f"see {server.log_path}"


async def chat_asking(url: str, user: str, question: str) -> None:
    chat = await ChatClient(url, user, f"{user}-password").connect()
    await chat.change_settings({"max_tokens": 8})
    await chat.ask(question)
    await chat.close()


def test_the_zip_holds_both_files_of_every_chat():
    chats = [("Kettle", "# Kettle\n", '{"messages": []}'), ("kettle", "# kettle\n", "{}")]
    with zipfile.ZipFile(io.BytesIO(exchange.as_zip(chats))) as archive:
        assert sorted(archive.namelist()) == ["Kettle.json", "Kettle.md", "kettle-2.json", "kettle-2.md"], \
            "two chats of one name (in any case) both stay"
        assert archive.read("kettle-2.md").decode() == "# kettle\n"


async def test_export_all_gives_each_of_the_users_chats_and_none_of_anyone_elses(signed_in_server):
    url = signed_in_server.url
    for question in ADA:
        await chat_asking(url, "ada", question)
    await chat_asking(url, "bob", BOB)

    ada = await ChatClient(url, "ada", "ada-password").connect()
    await ada.send("", command="Export")  # a new chat: nothing of its own to export, the button for all
    await ada.wait_idle()
    button = ada.action("export_all")
    assert button is not None, f"Export offers no Export all: {ada.all_text()}"
    assert (await ada.click(button)).status_code == 200
    deadline = time.monotonic() + 60  # the socket's events may come after the action's HTTP answer
    while (zipped := next((e for e in ada.elements if e["name"].endswith(".zip")), None)) is None:
        assert time.monotonic() < deadline, f"no zip came: {ada.all_text()}"
        await asyncio.sleep(0.1)
    assert "All your chats (2)" in ada.all_text()
    with zipfile.ZipFile(io.BytesIO(await ada.download(zipped))) as archive:
        names = archive.namelist()
        assert len(names) == 4, names
        found = {}
        for name in names:
            text = archive.read(name).decode()
            assert BOB not in text, f"bob's chat is in ada's export: {name}"
            found.setdefault(name.rsplit(".", 1)[0], {})[name.rsplit(".", 1)[1]] = text
    for question in ADA:
        stem, files = next(((stem, files) for stem, files in found.items() if question in files.get("md", "")),
                           (None, {}))
        assert stem is not None, f"{question!r} is not in the export: {names}"
        assert set(files) == {"md", "json"}, f"both files of {stem}"
        messages = [m for m in json.loads(files["json"])["messages"] if m["role"] != "system"]
        assert [m["role"] for m in messages] == ["user", "assistant"] and messages[0]["content"] == question
    await ada.close()
