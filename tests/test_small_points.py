"""Smaller things a user meets, through a real server with a real SQLite history and signed-in users: a chat of
chips alone is no chat in the history, Continue under a reply paged back to an earlier answer, and the Keys chip's
"You have no API keys" not standing in a reopened chat once a key is made."""

import asyncio
import json
import re
import time

import httpx
import pytest

from harness.chat_client import ChatClient
from harness.presets import APP_PRESET
from harness.server import ChainlitServer
from harness.stored import SECRET, add_user, step_texts

USERS = ("ada", "bob", "cy")
CONTINUE, REGENERATE, PREVIOUS = "continue_reply", "regenerate_reply", "reply_version_previous"
COUNTER = re.compile(r"\*(\d+) / (\d+)\*$")  # "*2 / 2*" ends a reply that has versions


@pytest.fixture(scope="module")
def server(engine_env, tmp_path_factory):
    folder = tmp_path_factory.mktemp("small-points")
    env = {**engine_env, **SECRET, "CHAT_CUSTOM_PRESET": json.dumps(APP_PRESET),
           "CHAT_HISTORY_DB": str(folder / "chats.db")}
    for name in USERS:
        add_user(env, name, f"{name}-password")
    started = ChainlitServer(env, folder / "server.log", host="0.0.0.0").start()
    yield started
    assert started.stop() == 0, f"see {started.log_path}"


async def signed_in(server, user: str, thread_id: str = "") -> ChatClient:
    return await ChatClient(server.url, user, f"{user}-password", thread_id=thread_id).connect()


async def until(condition, what: str, timeout: float = 120):
    """Waits for what the socket tells (its events may come after an action's HTTP answer)."""
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        assert time.monotonic() < deadline, f"waited {timeout:.0f} s for {what}"
        await asyncio.sleep(0.05)
    return found


async def listed(server, chat: ChatClient) -> dict[str, str]:
    """The user's chats as the history's sidebar lists them (Chainlit's own route): id -> name."""
    async with httpx.AsyncClient(base_url=server.url, cookies={"access_token": chat.token}, timeout=120) as http:
        response = await http.post("/project/threads", json={"pagination": {"first": 50}, "filter": {}})
    assert response.status_code == 200, response.text
    return {thread["id"]: thread["name"] for thread in response.json()["data"]}


async def test_a_chat_of_chips_alone_is_not_kept_and_one_with_words_is_named_after_them(server):
    ada = await signed_in(server, "ada")
    before = await listed(server, ada)
    await ada.send("", command="Export")
    await ada.wait_idle()
    await ada.send("", command="Status")
    await ada.wait_idle()
    await until(lambda: "Requests running / queued" in ada.all_text(), "the Status chip's answer")
    await ada.close()
    await asyncio.sleep(2)  # a closed tab's chat is written as it closes
    after = await listed(server, ada)
    assert after == before, f"a chat of chips alone is listed: {set(after.values()) - set(before.values())}"

    begun = await signed_in(server, "ada")  # a chat begun with a chip, then a question: kept, named after it
    await begun.send("", command="Status")
    await begun.wait_idle()
    await begun.change_settings({"max_tokens": 8})
    await begun.ask("Which kettle boils fastest?")
    await begun.close()
    assert begun.thread_id, "the page was never told the chat's thread"
    for _ in range(100):  # written in the background
        if begun.thread_id in (names := await listed(server, begun)):
            break
        await asyncio.sleep(0.2)
    assert names.get(begun.thread_id) == "Which kettle boils fastest?", names
    reopened = await signed_in(server, "ada", begun.thread_id)
    shown = [text for _, text in step_texts(reopened.resumed)]
    assert "Which kettle boils fastest?" in shown, shown
    await reopened.close()


async def test_continue_under_an_earlier_answer_says_only_the_latest_goes_on_and_changes_nothing(server):
    bob = await signed_in(server, "bob")
    await bob.change_settings({"max_tokens": 8, "temperature": 1.0})
    for _ in range(6):  # the random model may end a reply early: regenerate until the newest stops at the limit
        if bob.replies("ERNIE Chat"):
            latest = bob.replies("ERNIE Chat")[-1]
            await until(lambda: (bob.action(REGENERATE) or {}).get("forId") == latest.id, "a Regenerate button")
            await bob.click(bob.action(REGENERATE))
            await until(lambda: latest.id not in bob.messages and [
                m for m in bob.replies("ERNIE Chat") if "reply tokens" in m.content], "the regenerated reply")
        else:
            await bob.ask("Count from one to one hundred.")
        reply = bob.replies("ERNIE Chat")[-1]
        if COUNTER.search(reply.content) and "'max new tokens' limit" in reply.content:
            break
    else:
        pytest.fail(f"no regenerated reply stopped at the limit: {bob.all_text()[-400:]}")
    await until(lambda: (bob.action(CONTINUE) or {}).get("forId") == reply.id, "Continue under the newest answer")
    count = int(COUNTER.search(reply.content)[2])
    await until(lambda: (bob.action(PREVIOUS) or {}).get("forId") == reply.id, "the ◀ previous button")
    await bob.click(bob.action(PREVIOUS))
    await until(lambda: reply.content.endswith(f"*{count - 1} / {count}*"), "the earlier answer shown")
    earlier = reply.content
    before = set(bob.messages)
    assert (await bob.click(bob.action(CONTINUE))).status_code == 200
    said = await until(lambda: [m.content for m in bob.messages.values() if m.id not in before],
                       "an answer to Continue")
    assert any(f"shows answer {count - 1} of {count}" in text for text in said), said
    await asyncio.sleep(1)
    assert reply.content == earlier, "Continue changed the answer shown"
    await bob.close()


async def test_a_reopened_chat_does_not_say_there_are_no_keys_once_one_is_made(server):
    cy = await signed_in(server, "cy")
    await cy.change_settings({"max_tokens": 8})
    await cy.ask("What is an API key?")
    await cy.send("", command="Keys")
    await cy.wait_idle()
    await until(lambda: "You have no API keys" in cy.all_text(), "the Keys chip's answer")
    await cy.click(await until(lambda: cy.action("key_new"), "the New key button"))
    await until(lambda: "Your new API key" in cy.all_text(), "the new key")
    await cy.close()
    await asyncio.sleep(2)
    reopened = await signed_in(server, "cy", cy.thread_id)
    shown = "\n".join(text for _, text in step_texts(reopened.resumed))
    stored = "\n".join(step.get("output") or "" for step in reopened.resumed["steps"])
    assert "What is an API key?" in shown
    assert "You have no API keys" not in stored, "a reopened chat still says there are no keys"
    await reopened.close()
