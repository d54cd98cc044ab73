"""A stored chat is what the page showed: each way a message changes (finished, continued, regenerated, edited,
refused) reaches the history through one path (history.writes.show_and_store), so a chat reopened after a
restart of the server shows the same texts, and its next prompt holds the same turns.

One real server with its SQLite history, restarted in the middle; a socket.io client as the browser.
"""

import asyncio

import pytest

from harness.chat_client import ChatClient
from harness.replies import shown_within, stats_of
from harness.server import restartable_with_history
from harness.stored import step_texts

CONTINUE, REGENERATE = "continue_reply", "regenerate_reply"
LONG = "Please read this: " + " ".join(["water"] * 7000)  # fits beside a 16-token reply, not beside half the context


@pytest.fixture(scope="module")
def history(engine_env, tmp_path_factory):
    """The server's environment with its own history database; `start()` starts a server on it."""
    with restartable_with_history(engine_env, tmp_path_factory.mktemp("stored-as-shown")) as start:
        yield start




def _replies(client: ChatClient) -> list:
    return [m for m in client.replies("ERNIE Chat") if "reply tokens" in m.content or "*Stopped.*" in m.content]


async def _cut_reply(client: ChatClient):
    """A reply that hit its 16-token limit (the random test model may end one sooner: ask again)."""
    await client.change_settings({"max_tokens": 16, "temperature": 0.8})
    for _ in range(6):
        reply = await client.ask("Count from one to one hundred.")
        if "'max new tokens' limit" in reply.content:
            await shown_within(lambda: (client.action(CONTINUE) or {}).get("forId") == reply.id, "Continue under it")
            return reply
    pytest.fail("no reply reached the 16-token limit")


def _shown(client: ChatClient) -> list[tuple[str, str]]:
    """The questions and replies the page shows, in order."""
    return [("user_message" if m.type == "user_message" else "assistant_message", m.content)
            for m in client.messages.values() if m.type == "user_message" or m.author == "ERNIE Chat"]


async def test_continued_regenerated_edited_and_refused_messages_are_stored_as_shown_across_a_restart(history):
    server = history()
    client = await ChatClient(server.url).connect()
    try:
        # Continue: the whole reply, its cost line and its end are stored, not the part before Continue
        cut = await _cut_reply(client)
        before_continue = cut.content
        await client.click(client.action(CONTINUE))
        await shown_within(lambda: cut.content != before_continue and "reply tokens" in cut.content, "the continuation")
        assert stats_of(cut.content)["reply"] > stats_of(before_continue)["reply"]
        # A second turn, then an edit of the first question into one that cannot fit: refused, nothing changes
        second = await client.ask("And then?")
        await shown_within(lambda: (client.action(REGENERATE) or {}).get("forId") == second.id,
                           "the second reply's tools")
        shown = _shown(client)
        first_question = next(m for m in client.messages.values() if m.type == "user_message")
        await client.change_settings({"max_tokens": 8192})
        await client.edit(first_question.id, LONG)
        await shown_within(lambda: "only 5120 fit" in client.all_text(), "the edit refused")
        await client.wait_idle()
        await shown_within(lambda: first_question.content != LONG, "the question shown as it was")
        assert _shown(client) == shown, "a refused edit leaves every turn shown"
        await client.change_settings({"max_tokens": 16})
        prompt_live = stats_of((await client.ask("What next?")).content)["prompt"]
        shown = _shown(client)
    finally:
        await client.close()
    server.stop()

    server = history()  # the same history, a new server: the chat as the page showed it, and the same prompt
    reopened = await ChatClient(server.url, thread_id=client.thread_id).connect()
    try:
        assert step_texts(reopened.resumed) == shown
        assert any(cut.content.split("\n\n")[0] in text for _, text in shown), "the continuation is kept"
        await shown_within(lambda: reopened.action(REGENERATE), "the tools under the reopened chat's reply")
        await reopened.change_settings({"max_tokens": 16})
        before, starting = set(reopened.messages), "The engine is starting"
        for tries in range(1, 121):  # the new server's engine may still be starting: press again, as a user would
            await reopened.click(reopened.action(REGENERATE))
            await asyncio.sleep(0.5)
            if reopened.all_text().count(starting) < tries:
                break
        again = await shown_within(lambda: [m for m in _replies(reopened) if m.id not in before],
                                   "the regenerated reply", client=reopened)
        assert stats_of(again[-1].content)["prompt"] == prompt_live, "the reopened chat's prompt is the same"
    finally:
        await reopened.close()
