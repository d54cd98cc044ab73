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


async def test_a_missing_model_folder_is_said_as_such_with_what_to_do_and_the_status_gives_the_reason(
        engine_env, tmp_path):
    from harness.server import ChainlitServer

    server = ChainlitServer({**engine_env, "CHAT_MODEL": "/nonexistent", "CHAT_PRESET": "auto"},
                            tmp_path / "chainlit.log").start()
    try:
        chat = await ChatClient(server.url).connect()
        try:
            for _ in range(600):  # the start fails at its first check: no weights to look for, no download
                if "❌" in chat.all_text():
                    break
                await asyncio.sleep(0.1)
            said = chat.all_text()
            assert "There is no model folder at '/nonexistent'" in said, said[-600:]
            assert "Check the path" in said and "hub id" in said and "network" not in said.lower(), said[-600:]
            await chat.send("", command="Status")
            await chat.wait_idle()
            status = [m.content for m in chat.messages.values() if "|---|---|" in m.content][-1]
            assert "no model folder at '/nonexistent'" in status, status
        finally:
            await chat.close()
    finally:
        assert server.stop() == 0
