"""What a user sends the moment a chat opens, on a freshly started server: a message, a message into a reopened
chat, a settings change. Each is answered (or applied), none dropped, whichever of Chainlit's hooks runs first.
A real server started for this module, so the first tries meet it while it still imports vLLM."""

import json

import pytest

from harness.chat_client import ChatClient
from harness.presets import APP_PRESET
from harness.server import ChainlitServer
from harness.replies import ask, stats_of

TRIES = 20
DEFAULT_MAX_TOKENS = 64
@pytest.fixture(scope="module")
def fresh_server(engine_env, tmp_path_factory):
    folder = tmp_path_factory.mktemp("first-message")
    env = {**engine_env, "CHAT_CUSTOM_PRESET": json.dumps(APP_PRESET), "CHAT_MAX_TOKENS": str(DEFAULT_MAX_TOKENS)}
    server = ChainlitServer(env, folder / "chainlit.log").start()
    yield server
    assert server.stop() == 0, f"the server did not exit cleanly; see {folder / 'chainlit.log'}"


async def test_a_message_sent_as_the_chat_opens_is_answered_every_time(fresh_server):
    for attempt in range(TRIES):
        chat = await ChatClient(fresh_server.url).connect(wait_ready=False)
        try:
            reply = await ask(chat, "What is a cache?")
            assert stats_of(reply)["reply"] > 0, f"try {attempt + 1}: {reply!r}"
        finally:
            await chat.close()


async def test_a_message_sent_as_a_reopened_chat_opens_is_answered_with_its_turns(fresh_server):
    first = await ChatClient(fresh_server.url).connect()
    try:
        alone = stats_of(await ask(first, "What is a cache?"))["prompt"]
        await ask(first, "And a prefix cache?")
        thread_id = first.thread_id
    finally:
        await first.close()
    for attempt in range(TRIES // 2):
        chat = await ChatClient(fresh_server.url, thread_id=thread_id).connect(wait_ready=False)
        try:
            stats = stats_of(await ask(chat, "What is a cache?"))
            assert stats["prompt"] > alone, f"try {attempt + 1}: the earlier turns were not in the prompt: {stats}"
            assert chat.resume_error is None and chat.thread_id == thread_id, "it goes on in the same thread"
        finally:
            await chat.close()


async def test_a_settings_change_sent_as_the_chat_opens_is_kept(fresh_server):
    for attempt in range(TRIES // 2):
        chat = await ChatClient(fresh_server.url).connect(wait_ready=False)
        try:
            await chat.sio.emit("chat_settings_change", {"max_tokens": 16, "temperature": 0.5})
            await chat.wait_opened()
            stats = stats_of(await ask(chat, "Tell me a long story."))
            assert stats["reply"] <= 16, f"try {attempt + 1}: the change was lost to the chat's opening: {stats}"
        finally:
            await chat.close()
