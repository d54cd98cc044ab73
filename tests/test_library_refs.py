"""An @word in a chat message, through a real server (the local user's library, on the shared test server): it is a
library reference only where it names one of the user's documents; otherwise the message is answered as written
(with a quiet note when the library is on). A message that names a document but matches none of its words draws
on the document's start, named under the reply; a library search that finds nothing says so."""

import json
import uuid
from pathlib import Path

import pytest

from harness.chat_client import ChatClient

LABELLED = json.loads((Path(__file__).parent / "data" / "library_set.json").read_text())
PLANTS = LABELLED["documents"]["养花笔记.txt"]
REFUSED = "not sent to the model"


@pytest.fixture
async def client(app_server):
    chat = await ChatClient(app_server.url).connect()
    yield chat
    await chat.close()


async def said(chat: ChatClient, text: str, command: str | None = None, files: list[str] = ()) -> str:
    """Everything the app showed after sending `text` (the reply included), once it is done."""
    before = set(chat.messages)
    await chat.send(text, command=command, files=list(files))
    await chat.wait_idle()
    return "\n".join(m.content for m in chat.messages.values() if m.id not in before and m.type != "user_message")


async def test_an_at_word_that_names_no_document_is_answered_as_written_and_a_named_document_is_read(client):
    await client.change_settings({"max_tokens": 8, "library": False})
    # the local user's library may be empty here, or hold other tests' documents: neither names these
    for question in ("What does @dataclass do in Python?", "In CSS, what does @media do?"):
        shown = await said(client, question)
        assert REFUSED not in shown and "reply tokens" in shown, shown

    name = f"plants|{uuid.uuid4().hex[:6]}.txt"  # a "|" in the name must not break the library's table
    uploaded = await client.upload(name, "\n\n".join(PLANTS).encode(), "text/plain")
    assert "Added to your library" in await said(client, "", "Library", [uploaded.json()["id"]])
    listed = await said(client, "", "Library")
    assert f"| {name.replace('|', chr(92) + '|')} |" in listed, listed

    shown = await said(client, "mail me at x @example.com")
    assert REFUSED not in shown and "reply tokens" in shown and "example.com names no document" not in shown
    await client.change_settings({"library": True})
    shown = await said(client, "mail me at x @example.com")
    assert REFUSED not in shown and "reply tokens" in shown
    assert "@example.com names no document in your library" in shown, "with the library on, a quiet note"

    # Named, but none of the other words is in it: the reply draws on the document's start, and says so
    await client.change_settings({"library": False})
    shown = await said(client, f"@{name.split('.')[0]} 概括一下")
    assert f"[1] {name}, passage 1" in shown and "matched your other words" in shown, shown
    source = [e for e in client.elements if e.get("name", "").startswith(f"[1] {name}")]
    assert source and PLANTS[0][:20] in (await client.download(source[-1])).decode(), "the passage is its start"

    await client.change_settings({"library": True})
    shown = await said(client, "zzyzx qwxv")
    assert "Nothing in your library matched this message" in shown and "reply tokens" in shown
