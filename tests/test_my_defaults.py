"""A user's own defaults for new chats, through a real server with a history and the socket as the browser uses
it: "Use these for new chats" in one chat makes the next chat open with that chat's sampling and system prompt
(kept in the history's database, so a restart keeps them), and turning it off gives new chats the app's again."""

import json

from harness.chat_client import ChatClient
from harness.presets import APP_PRESET
from harness.server import ChainlitServer
from harness.stored import SECRET, add_user

MINE = {"temperature": 0.3, "top_p": 0.5, "max_tokens": 64, "system_prompt": "Answer like a ship's captain."}


async def opened(url: str, *signed_in: str) -> dict:
    """The sidebar's values in a new chat (of a signed-in user: name and password)."""
    chat = await ChatClient(url, *signed_in).connect()
    try:
        return {widget["id"]: widget["initial"] for widget in chat.settings_widgets}
    finally:
        await chat.close()


async def test_a_chats_sampling_kept_as_my_defaults_opens_the_next_chats_until_turned_off(engine_env, tmp_path):
    env = {**engine_env, "CHAT_HISTORY_DB": str(tmp_path / "chats.db"), "CHAT_CUSTOM_PRESET": json.dumps(APP_PRESET),
           "CHAT_API": "false"}
    server = ChainlitServer(env, tmp_path / "one.log").start()
    try:
        first = await opened(server.url)
        assert first["my_defaults"] is False and first["temperature"] != MINE["temperature"], first
        chat = await ChatClient(server.url).connect()
        try:
            await chat.change_settings({**MINE, "my_defaults": True})
        finally:
            await chat.close()
        second = await opened(server.url)
        assert {key: second[key] for key in MINE} == MINE and second["my_defaults"] is True, second
    finally:
        assert server.stop() == 0

    server = ChainlitServer(env, tmp_path / "two.log").start()  # kept in the database, not in the process
    try:
        again = await opened(server.url)
        assert {key: again[key] for key in MINE} == MINE, again
        chat = await ChatClient(server.url).connect()
        try:
            await chat.change_settings({"my_defaults": False})
        finally:
            await chat.close()
        back = await opened(server.url)
        assert {key: back[key] for key in MINE} == {key: first[key] for key in MINE}, back
        assert back["my_defaults"] is False
    finally:
        assert server.stop() == 0


async def test_my_defaults_are_mine_alone(engine_env, tmp_path):
    env = {**engine_env, **SECRET, "CHAT_HISTORY_DB": str(tmp_path / "chats.db"), "CHAT_API": "false",
           "CHAT_CUSTOM_PRESET": json.dumps(APP_PRESET)}
    add_user(env, "alice", "alice-password")
    add_user(env, "bob", "bob-password")
    server = ChainlitServer(env, tmp_path / "chainlit.log", host="0.0.0.0").start()
    try:
        alice = await ChatClient(server.url, "alice", "alice-password").connect()
        try:
            await alice.change_settings({**MINE, "my_defaults": True})
        finally:
            await alice.close()
        hers = await opened(server.url, "alice", "alice-password")
        his = await opened(server.url, "bob", "bob-password")
        assert {key: hers[key] for key in MINE} == MINE, hers
        assert his["system_prompt"] != MINE["system_prompt"] and his["my_defaults"] is False, his
    finally:
        assert server.stop() == 0
