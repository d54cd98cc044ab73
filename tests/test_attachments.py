"""Attachments end to end: files posted to Chainlit's upload route as the browser's paperclip does, then the message
with their references over socket.io, on a real server with the real engine. The tiny model's text is gibberish,
so what is judged is the prompt's size in the reply's cost line and the notices the user reads."""

import asyncio
import json
import re
import sqlite3
import time

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from harness.chat_client import ChatClient
from harness.presets import APP_PRESET
from harness.server import ChainlitServer
from harness.replies import stats_of

CONTEXT = APP_PRESET["max_model_len"]
REPLY_TOKENS = 16


def numbered_lines(count: int) -> bytes:
    return "".join(f"line {i}: the quick brown fox jumps over the lazy dog\n" for i in range(count)).encode()


@pytest.fixture(scope="module")
def tokens_of(tiny_model):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    return lambda data: len(tokenizer.encode(data.decode(), add_special_tokens=False))


@pytest.fixture
async def chat(app_server):
    client = await ChatClient(app_server.url).connect()
    await client.change_settings({"max_tokens": REPLY_TOKENS})
    yield client
    await client.close()


async def attach(chat: ChatClient, name: str, data: bytes, mime: str) -> str:
    uploaded = await chat.upload(name, data, mime)
    assert uploaded.status_code == 200, uploaded.text
    return uploaded.json()["id"]


async def ask_with(chat: ChatClient, text: str, files: list[str]):
    await chat.send(text, files=files)
    await chat.wait_idle()
    return chat.replies()[-1]


def prompt_tokens_served(url: str) -> float:
    """The engine's count of prompt tokens it was given, from the app's /metrics."""
    for family in text_string_to_metric_families(httpx.get(f"{url}/metrics", timeout=60).text):
        if family.name == "vllm:prompt_tokens":
            return sum(sample.value for sample in family.samples if sample.name.endswith("_total"))
    raise AssertionError("no vllm:prompt_tokens counter in /metrics")


async def test_a_text_file_goes_into_the_prompt_with_its_name(app_server, chat, tokens_of):
    without = await ChatClient(app_server.url).connect()
    await without.change_settings({"max_tokens": REPLY_TOKENS})
    plain = stats_of((await without.ask("What is in it?")).content)["prompt"]
    await without.close()
    notes = numbered_lines(30)
    reply = await ask_with(chat, "What is in it?", [await attach(chat, "notes.md", notes, "text/markdown")])
    added = stats_of(reply.content)["prompt"] - plain  # the same question in a new chat, with the file
    assert tokens_of(notes) <= added <= tokens_of(notes) + 40, (plain, added, tokens_of(notes))
    assert "left out" not in reply.content
    alone = await ask_with(chat, "", [await attach(chat, "todo.txt", b"buy milk", "text/plain")])
    assert "reply tokens" in alone.content, "a file sent without words is answered"


def stored_text(database: str, message_id: str) -> str | None:
    with sqlite3.connect(database) as db:
        row = db.execute('SELECT "text" FROM chat_attachments WHERE "for_id" = ?', (message_id,)).fetchone()
    return row and row[0]


async def test_a_file_too_long_for_the_context_is_cut_and_the_reply_says_how_much(app_server, chat, tokens_of):
    log = numbered_lines(900)  # some 28,000 tokens of the tiny tokenizer: about three contexts of the test preset
    asked = await chat.send("Summarize the log.", files=[await attach(chat, "server.log", log, "text/plain")])
    await chat.wait_idle()
    reply = chat.replies()[-1]
    prompt = stats_of(reply.content)["prompt"]
    assert (CONTEXT - REPLY_TOKENS) * 0.95 <= prompt <= CONTEXT - REPLY_TOKENS, "the cut fills what the reply leaves"
    found = re.search(r"server\.log: ([\d,]+) of ([\d,]+) tokens were left out: the context holds ([\d,]+) tokens",
                      reply.content)
    assert found, reply.content[-400:]
    left_out, total, context = (int(group.replace(",", "")) for group in found.groups())
    assert context == CONTEXT and abs(total - tokens_of(log)) <= 4
    assert total - left_out <= prompt, "what was kept is in the prompt"
    database, deadline, kept = app_server.env["CHAT_HISTORY_DB"], time.monotonic() + 120, None
    while kept is None or len(kept) == len(log):  # stored as asked, then (in the background) as the model read it
        assert time.monotonic() < deadline, "the chat keeps the start of the file that the model read"
        await asyncio.sleep(0.2)
        kept = stored_text(database, asked)
    assert log.decode().startswith(kept) and abs(tokens_of(kept.encode()) - (total - left_out)) <= 4


async def test_binary_data_and_other_types_are_refused_in_the_chat_and_nothing_reaches_the_engine(app_server, chat):
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4
    refused = await chat.upload("photo.png", png, "image/png")
    assert refused.status_code == 400 and "not allowed" in refused.text, "Chainlit's route checks the declared type"
    # what browsers declare for text they know no type of, or for CSV on Windows: the extension decides
    unknown, excel = "application/octet-stream", "application/vnd.ms-excel"
    for name, mime, status in [("main.rs", unknown, 200), ("setup.exe", unknown, 400),
                               ("table.csv", excel, 200), ("sheet.xls", excel, 400)]:
        assert (await chat.upload(name, b"a,b\n1,2\n", mime)).status_code == status, name
    await chat.ask("Hello")  # the engine is up (a start's warm-up counts prompt tokens too)
    served = prompt_tokens_served(app_server.url)
    before = len(chat.replies("ERNIE Chat"))
    disguised = await attach(chat, "photo.txt", png, "text/plain")  # what a client claims is not trusted
    await chat.send("Describe the picture.", files=[disguised])
    await chat.wait_idle()
    error = chat.replies()[-1].content
    assert "not sent to the model" in error and "photo.txt is not a text file" in error
    assert ".txt" in error and ".py" in error and "PDFs" in error, "the refusal names what is accepted"
    many = [await attach(chat, f"part{i}.txt", b"some text", "text/plain") for i in range(6)]
    await chat.send("Read all six.", files=many)
    await chat.wait_idle()
    assert "6 files are attached, but at most 5" in chat.replies()[-1].content
    assert len(chat.replies("ERNIE Chat")) == before and prompt_tokens_served(app_server.url) == served


async def test_uploads_are_guarded_like_every_other_route(app_server, chat):
    too_big = await chat.upload("big.txt", b"x" * (2 * 2**20), "text/plain")
    assert too_big.status_code == 413 and "1 MB" in too_big.json()["detail"], "refused before Chainlit reads it"
    other_site = await chat.upload("notes.txt", b"text", "text/plain", headers={"Origin": "http://evil.example"})
    assert other_site.status_code == 403
    async with httpx.AsyncClient(base_url=app_server.url, timeout=120) as http:  # through a proxy: no local user
        proxied = await http.post("/project/file", params={"session_id": chat.session_id},
                                  headers={"X-Forwarded-For": "203.0.113.9"},
                                  files={"file": ("notes.txt", b"text", "text/plain")})
    assert proxied.status_code == 401, proxied.text


async def test_a_reopened_chat_keeps_its_attachment_in_the_prompt_after_a_restart(engine_env, tmp_path, chat):
    env = {**engine_env, "CHAT_CUSTOM_PRESET": json.dumps(APP_PRESET), "CHAT_HISTORY_DB": str(tmp_path / "chats.db"),
           "CHAT_MAX_TOKENS": str(REPLY_TOKENS)}
    notes = numbered_lines(40)
    first = ChainlitServer(env, tmp_path / "first.log").start()
    try:
        asking = await ChatClient(first.url).connect()
        one = await ask_with(asking, "Read this.", [await attach(asking, "notes.txt", notes, "text/plain")])
        await asking.close()
    finally:
        assert first.stop() == 0
    # Chainlit deletes its uploads folder when a server stops: another server's (`chat`'s) must go on
    assert (await chat.upload("after.txt", b"still here", "text/plain")).status_code == 200
    second = ChainlitServer(env, tmp_path / "second.log").start()
    try:
        resumed = await ChatClient(second.url, thread_id=asking.thread_id).connect()
        two = await resumed.ask("Go on")
        earlier = stats_of(one.content)
        assert stats_of(two.content)["prompt"] > earlier["prompt"] + earlier["reply"], \
            "the first turn, its file included, is in the prompt again"
        async with httpx.AsyncClient(base_url=second.url, cookies={"access_token": resumed.token}, timeout=120) as http:
            deleted = await http.request("DELETE", "/project/thread", json={"threadId": asking.thread_id})
        assert deleted.status_code == 200, deleted.text
        await resumed.close()
    finally:
        assert second.stop() == 0
    with sqlite3.connect(tmp_path / "chats.db") as db:
        assert db.execute("SELECT COUNT(*) FROM chat_attachments").fetchone() == (0,), "a deleted chat's files go"


async def test_an_empty_file_is_refused_by_name_in_the_chat_and_the_library_never_with_a_500(chat):
    uploaded = await chat.upload("x.txt", b"", "text/plain")
    assert uploaded.status_code == 200, uploaded.text
    before = len(chat.replies("ERNIE Chat"))
    await chat.send("What is in it?", files=[uploaded.json()["id"]])
    await chat.wait_idle()
    refusal = chat.replies()[-1].content
    assert "not sent to the model" in refusal and "x.txt is empty" in refusal, refusal
    assert len(chat.replies("ERNIE Chat")) == before
    assert any(m.content == "What is in it?" for m in chat.messages.values()), "the message stays in the chat"
    again = await chat.upload("x.txt", b"", "text/plain")
    await chat.send("", command="Library", files=[again.json()["id"]])
    await chat.wait_idle()
    assert "Not added: x.txt is empty" in chat.replies()[-1].content
