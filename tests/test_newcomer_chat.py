"""A newcomer's chat through a real server (socket.io client as the browser, history on): what a renamed chat
exports as, and what Regenerate keeps of the answers it replaces.
"""

import asyncio

import pytest

from harness.chat_client import ChatClient


@pytest.fixture
async def client(app_server):
    chat = await ChatClient(app_server.url).connect()
    yield chat
    await chat.close()


async def test_a_renamed_chat_exports_under_its_new_name(client):
    await client.change_settings({"max_tokens": 16})
    await client.ask("Explain in three sentences what a KV cache is.")
    await asyncio.wait_for(client._thread_known.wait(), 60)  # the page learns its chat's id once it is stored
    async with await client._http() as http:  # the history's Rename, as the sidebar sends it
        renamed = await http.put("/project/thread", json={"threadId": client.thread_id, "name": "KV cache test chat"})
    assert renamed.status_code == 200, renamed.text
    await client.send("", command="Export")
    await client.wait_idle()
    names = sorted(element["name"] for element in client.elements)
    assert names == ["KV-cache-test-chat.json", "KV-cache-test-chat.md"], (names, client.all_text()[-600:])
    markdown = (await client.download(next(e for e in client.elements if e["name"].endswith(".md")))).decode()
    assert markdown.startswith("# KV cache test chat\n")

