"""Regenerate, Continue, Export and Import: the prompt of a continuation, an import file's checks, and the four
end to end through a real Chainlit server (socket.io client as the browser; history on, as the shared server runs).
"""

import asyncio
import json
import time

import pytest
from transformers import AutoTokenizer

from engine.chat import END_OF_SENTENCE, build_prompt
from engine.errors import ReplyFillsContextError
from engine.reports import Stats
from harness.chat_client import ChatClient
from harness.replies import stats_of, stop_a_long_reply
from harness.stored import step_texts
from history import exchange
from ui.reply import joined
from ui.words import say

CONTINUE, REGENERATE = "continue_reply", "regenerate_reply"
PREVIOUS, NEXT = "reply_version_previous", "reply_version_next"


@pytest.fixture(scope="module")
def tokenizer(tiny_model):
    return AutoTokenizer.from_pretrained(tiny_model)


def test_a_continuation_ends_with_the_partial_reply_and_keeps_it_whole_with_its_question(tokenizer):
    chat = [{"role": "user", "content": "Name three colours."}, {"role": "assistant", "content": "Red, green and"}]
    prompt = build_prompt(tokenizer, "Be brief.", chat, 512, 64, continue_reply=True)
    text = tokenizer.decode(prompt.token_ids)
    assert text.endswith("Assistant: Red, green and") and END_OF_SENTENCE not in text
    long = [{"role": "user", "content": "old " * 300}, {"role": "assistant", "content": "x " * 300}, *chat]
    trimmed = build_prompt(tokenizer, "", long, 256, 64, continue_reply=True)
    assert trimmed.dropped_messages == 2 and tokenizer.decode(trimmed.token_ids).endswith("Red, green and")
    # a reply longer than the reserve leaves room for: the history goes and it goes on in what the context has left
    stopped_late = [*long[:2], chat[0], {"role": "assistant", "content": "y " * 150}]
    going_on = build_prompt(tokenizer, "", stopped_late, 256, 200, continue_reply=True)
    assert going_on.dropped_messages == 2 and 0 < going_on.max_tokens == 256 - len(going_on.token_ids) < 200
    assert tokenizer.decode(going_on.token_ids).endswith("y ")
    with pytest.raises(ReplyFillsContextError, match="This reply cannot go on"):  # not "your message"
        build_prompt(tokenizer, "", [chat[0], {"role": "assistant", "content": "y " * 400}], 256, 64,
                     continue_reply=True)
    with pytest.raises(ValueError):
        build_prompt(tokenizer, "", chat[:1], 512, 64, continue_reply=True)


def test_the_cost_of_a_continued_reply_is_the_whole_reply():
    first = Stats(0.05, 100.0, 40, 16, 0, "length", 0, 0.3, max_tokens=16)
    more = Stats(0.02, 50.0, 56, 11, 48, "stop", 0, 0.4, max_tokens=16)
    whole = joined(first, more)
    assert (whole.prompt_tokens, whole.generated_tokens, whole.cached_tokens, whole.ttft_s) == (40, 27, 48, 0.05)
    assert whole.finish_reason == "stop" and whole.total_s == pytest.approx(0.7)
    assert whole.decode_tokens_per_s == pytest.approx(25 / (15 / 100 + 10 / 50))
    assert joined(None, more) is more and joined(first, None) is None


def _refusal(data, context: int = 4096) -> str:
    with pytest.raises(exchange.ImportRefused) as refused:
        exchange.parse(data if isinstance(data, bytes) else json.dumps(data).encode(), context)
    return str(refused.value)


def test_an_import_is_checked_and_each_refusal_says_what_and_how_to_fix_it():
    pair = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert "not valid JSON" in _refusal(b'{"messages": [')
    assert "holds no messages" in _refusal({"chat": []})
    assert 'role "tool"' in _refusal([*pair, {"role": "tool", "content": "42"}]) and "change its role" in \
        _refusal([{"role": "robot", "content": "x"}])
    assert "10,000 messages" in _refusal(pair * 5000) and "split it" in _refusal(pair * 5000)
    assert "message 2 is larger than the context" in _refusal([pair[0], {"role": "assistant", "content": "z" * 20000}])
    assert "second assistant message in a row" in _refusal([*pair, pair[1]])
    assert "not text" in _refusal([{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}])
    assert "system message after the chat began" in _refusal([*pair, {"role": "system", "content": "s"}])


def test_the_export_is_openai_messages_and_markdown_and_imports_back():
    turns = [{"role": "user", "content": "Sum it.", "attachments": [{"name": "a.csv", "text": "1,2"}]},
             {"role": "assistant", "content": "3"}]
    args = (turns, "baidu/ERNIE-4.5-0.3B-PT", "4gb", {"temperature": 0.8, "top_p": 0.8, "max_tokens": 512},
            "Be brief.", "Sum it")
    saved = json.loads(exchange.as_json(*args))
    assert saved["messages"][0] == {"role": "system", "content": "Be brief."}
    assert saved["messages"][1]["content"].startswith("a.csv\n```\n1,2\n```") and saved["model"].startswith("baidu")
    back = exchange.parse(exchange.as_json(*args).encode(), 4096)
    assert [t["role"] for t in back.turns] == ["user", "assistant"] and back.title == "Sum it"
    assert back.settings == {"temperature": 0.8, "top_p": 0.8, "max_tokens": 512, "system_prompt": "Be brief."}
    markdown = exchange.as_markdown(*args)
    assert markdown.startswith("# Sum it") and "- Memory preset: `4gb`" in markdown and "## ERNIE\n\n3" in markdown
    plain = exchange.parse(json.dumps([{"role": "user", "content": [{"type": "text", "text": "hi"}]}]).encode(), 99)
    assert plain.turns == [{"role": "user", "content": "hi"}]


# ---- end to end ------------------------------------------------------------------------------------------------

@pytest.fixture
async def client(app_server):
    chat = await ChatClient(app_server.url).connect()
    yield chat
    await chat.close()


async def _until(condition, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the chat did not show what the action did"
        await asyncio.sleep(0.05)


async def _finished(client: ChatClient, message_id: str, before: str = "", timeout: float = 300) -> str:
    """The reply `message_id` once it shows new text and its end (a cost line or the Stop note)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        shown = client.messages.get(message_id)
        if shown and shown.content != before and ("reply tokens" in shown.content or "*Stopped.*" in shown.content):
            return shown.content
        await asyncio.sleep(0.05)
    raise AssertionError(f"reply {message_id} did not end: {client.all_text()[-400:]!r}")


async def test_continue_goes_on_in_the_same_message_and_regenerate_replaces_the_reply(client, app_server):
    await client.change_settings({"max_tokens": 16, "temperature": 0.8})
    first, before = None, []
    for _ in range(4):  # the random test model may end a reply before the limit: ask until one is cut by it
        before = client.replies("ERNIE Chat")
        first = await client.ask("Count from one to one hundred.")
        if "'max new tokens' limit" in first.content:
            break
    else:
        pytest.fail("no reply reached the 16-token limit")
    action = client.action(CONTINUE)
    assert action and action["forId"] == first.id and client.action(REGENERATE)["forId"] == first.id
    cut = first.content  # `first` shows the message as it changes
    answer = cut.split("\n\n*The reply hit")[0]
    offered = {a["id"] for a in client.actions}
    response = await client.click(action)
    assert response.status_code == 200, response.text
    whole = await _finished(client, first.id, cut)
    assert whole.startswith(answer) and len(client.replies("ERNIE Chat")) == len(before) + 1
    assert stats_of(whole)["reply"] > stats_of(cut)["reply"], "the cost line counts the whole reply"
    assert stats_of(whole)["prompt"] == stats_of(cut)["prompt"]
    # Regenerate: a new answer to the same question in place of the old one, in the chat and in the history.
    # The finished text and the buttons under it reach the page as separate events: press the new button, as a
    # user can only press what is shown
    await _until(lambda: (client.action(REGENERATE) or {}).get("id") not in offered | {None})
    await client.click(client.action(REGENERATE))

    def replaced():  # the socket's events may come after the action's HTTP answer
        return [m for m in client.replies("ERNIE Chat") if "reply tokens" in m.content and m.id != first.id]
    await _until(lambda: first.id not in client.messages and replaced())
    replies = replaced()
    resumed = await ChatClient(app_server.url, thread_id=client.thread_id).connect()
    try:
        texts = [text for kind, text in step_texts(resumed.resumed) if kind == "assistant_message"]
        assert texts == [replies[-1].content], "the history holds the new reply only"
        assert resumed.action(REGENERATE), "a reopened chat offers the tools under its latest reply"
        await resumed.click(resumed.action(REGENERATE))
        await _until(lambda: [m for m in resumed.replies("ERNIE Chat") if "reply tokens" in m.content])
    finally:
        await resumed.close()


async def test_a_regenerated_reply_keeps_the_earlier_answer_a_press_away_also_in_a_reopened_chat(client, app_server):
    await client.change_settings({"max_tokens": 16, "temperature": 0.8})
    first = await client.ask("Name three colours.")
    earlier = first.content
    await _until(lambda: (client.action(REGENERATE) or {}).get("forId") == first.id)
    await client.click(client.action(REGENERATE))

    def regenerated():
        return [m for m in client.replies("ERNIE Chat") if m.id != first.id and "reply tokens" in m.content]
    await _until(lambda: first.id not in client.messages and regenerated())
    again = regenerated()[-1]
    newest = again.content
    assert newest.endswith("*2 / 2*"), newest
    await _until(lambda: (client.action(PREVIOUS) or {}).get("forId") == again.id)
    assert not client.action(NEXT), "the newest answer has no next one"
    await client.click(client.action(PREVIOUS))
    await _until(lambda: again.content == f"{earlier}\n\n*1 / 2*")
    await _until(lambda: (client.action(NEXT) or {}).get("forId") == again.id and not client.action(PREVIOUS))
    await client.click(client.action(NEXT))
    await _until(lambda: again.content == newest)

    resumed = await ChatClient(app_server.url, thread_id=client.thread_id).connect()
    try:
        texts = [text for kind, text in step_texts(resumed.resumed) if kind == "assistant_message"]
        assert texts == [newest], "the history shows the newest answer"
        await _until(lambda: (resumed.action(PREVIOUS) or {}).get("forId") == again.id)
        await resumed.click(resumed.action(PREVIOUS))
        await _until(lambda: again.id in resumed.messages and resumed.messages[again.id].content.startswith(earlier))
    finally:
        await resumed.close()


async def test_a_regenerated_reply_is_saved_with_the_earlier_answers_while_it_streams(client, app_server):
    """A server killed while a regenerated reply streams keeps what it saved last: the earlier answers with it."""
    import sqlite3

    from history.writes import CUT_OFF_NOTE

    def saved_while_streaming() -> list:
        with sqlite3.connect(app_server.env["CHAT_HISTORY_DB"]) as db:
            rows = db.execute('SELECT metadata FROM steps WHERE "threadId" = ? AND type = ?',
                              (client.thread_id, "assistant_message")).fetchall()
        return [json.loads(meta) for (meta,) in rows if json.loads(meta or "{}").get("cut_off")]

    for _ in range(3):  # the random test model may end a reply before it is saved while streaming: try again
        await client.change_settings({"max_tokens": 16, "temperature": 0.8})
        first = await client.ask("Name three rivers.")
        earlier = first.content
        await client.change_settings({"max_tokens": 8192})
        await _until(lambda: (client.action(REGENERATE) or {}).get("forId") == first.id)
        pressing = asyncio.create_task(client.click(client.action(REGENERATE)))  # answered once the reply ends
        while not saved_while_streaming() and not pressing.done():
            await asyncio.sleep(0.05)
        if saved_while_streaming():
            break
        await pressing
    else:
        pytest.fail("in 3 tries the regenerated reply had ended before it was saved while streaming")
    versions = saved_while_streaming()[-1]["versions"]
    await client.stop()
    await asyncio.wait_for(pressing, 300)
    assert versions[0] == earlier and versions[-1].endswith(CUT_OFF_NOTE), versions


async def test_a_continued_reply_can_be_stopped_and_continued_again(client, tokenizer):
    # The reply and its continuations must fit the context (10,240) to go on: the random test model's text
    # tokenizes again to about 1.6 times the tokens it was written in, so a reply whose Stop came late (a busy
    # machine can leave the test client unscheduled for seconds) is replaced by a new one.
    for _ in range(3):
        await client.change_settings({"max_tokens": 8192})  # long: Stop lands mid-reply
        reply = await stop_a_long_reply(client, lambda: client.send("Tell me a very long story."))
        if len(tokenizer.encode(reply.content)) > 4000:
            continue
        await client.change_settings({"max_tokens": 2000})
        await _until(lambda: (client.action(CONTINUE) or {}).get("forId") == reply.id)  # a stopped reply goes on
        before = reply.content.split("\n\n*Stopped.*")[0]
        clicked = asyncio.ensure_future(client.click(client.action(CONTINUE)))
        deadline = time.monotonic() + 300
        while reply.content.split("\n\n*Stopped.*")[0] == before and not clicked.done():
            assert time.monotonic() < deadline, "the continuation showed no text"
            await asyncio.sleep(0.02)
        await client.stop()
        await clicked
        await _until(lambda: "*Stopped.*" in reply.content or "reply tokens" in reply.content)
        assert reply.content.startswith(before) and reply.content.split("\n\n*Stopped.*")[0] != before, \
            f"the continuation goes on from the stopped text: {client.all_text()[-300:]!r}"
        if "*Stopped.*" in reply.content:
            break
        # the test client saw the continuation only once it had ended: start again
    assert "*Stopped.*" in reply.content
    # the finished text and the buttons under it reach the page as separate events
    await _until(lambda: (client.action(CONTINUE) or {}).get("forId") == reply.id)
    await client.change_settings({"max_tokens": 16})
    stopped = reply.content
    await client.click(client.action(CONTINUE))
    assert (await _finished(client, reply.id, stopped)).startswith(stopped.split("\n\n*Stopped.*")[0])
    assert "Task manually stopped" not in client.all_text()


async def test_a_reply_longer_than_the_reserve_goes_on_in_what_the_context_has_left(client):
    await client.change_settings({"max_tokens": 4000})
    for _ in range(3):  # the random test model may end a reply before the limit: ask until one is cut by it
        reply = await client.ask("Tell me a very long story.")
        if "'max new tokens' limit" in reply.content:
            break
    else:
        pytest.fail("no reply reached the 4,000-token limit")
    # Now the reply's reserve (half the 10,240-token context) leaves less room than the reply and its question take
    await client.change_settings({"max_tokens": 8192})
    cut = reply.content
    await client.click(client.action(CONTINUE))  # returns once the continuation has ended
    whole = await _finished(client, reply.id, cut, timeout=60)
    assert whole.startswith(cut.split("\n\n*The reply hit")[0]), "it goes on from where it was cut"
    assert stats_of(whole)["reply"] > stats_of(cut)["reply"] and "cannot go on" not in client.all_text()


async def test_a_chat_exports_as_markdown_and_json_and_imports_as_a_new_chat_of_its_owner(client, app_server):
    await client.change_settings({"max_tokens": 24})
    await client.ask("What is a cache?")
    await client.send("", command="Export")
    await client.wait_idle()
    files = {element["name"].rsplit(".", 1)[1]: element for element in client.elements}
    markdown = (await client.download(files["md"])).decode()
    assert "- Model: `" in markdown and "- Sampling: temperature" in markdown and "What is a cache?" in markdown
    exported = json.loads(await client.download(files["json"]))
    assert [m["role"] for m in exported["messages"]][-2:] == ["user", "assistant"]
    # refused: bad JSON, a role vLLM refuses; then the export itself imports as a new chat
    for data, said in ((b"{nope", "not valid JSON"), (json.dumps([{"role": "tool", "content": "1"}]).encode(),
                                                       'role "tool"')):
        uploaded = await client.upload("chat.json", data, "application/json")
        await client.send("", command="Import", files=[uploaded.json()["id"]])
        await client.wait_idle()
        assert said in client.all_text() and "Nothing was imported" in client.all_text()
    uploaded = await client.upload("chat.json", json.dumps(exported).encode(), "application/json")
    await client.send("", command="Import", files=[uploaded.json()["id"]])
    await client.wait_idle()
    done = [m.content for m in client.messages.values() if m.content.startswith("✅ Imported")]
    assert done, client.all_text()[-500:]
    thread_id = done[-1].split("/thread/")[1].split(")")[0]
    opened = await ChatClient(app_server.url, thread_id=thread_id).connect()
    try:
        assert opened.resume_error is None
        assert [t for _, t in step_texts(opened.resumed)][:2] == [m["content"] for m in exported["messages"]][-2:]
        reply = await opened.ask("And a prefix cache?")
        assert stats_of(reply.content)["prompt"] > stats_of(opened.resumed["steps"][-1]["output"] + " 0 prompt + 0 "
                                                            "reply tokens · 0 cached")["prompt"]
    finally:
        await opened.close()


def test_regenerate_and_continue_are_refused_with_a_reason_while_they_cannot_run():
    from types import SimpleNamespace

    from ui import chat_tools

    latest = SimpleNamespace(id="r1")
    chat = SimpleNamespace(replying=False, reply=latest, turns=[{"role": "user"}, {"role": "assistant"}])
    engine, action = SimpleNamespace(state="ready"), SimpleNamespace(forId="r1")
    assert chat_tools._refusal(engine, chat, action) is None
    assert chat_tools._refusal(engine, chat, SimpleNamespace(forId="older")) == chat_tools.NOT_LATEST
    assert chat_tools._refusal(engine, SimpleNamespace(**{**vars(chat), "replying": True}), action) == chat_tools.BUSY
    for changing in ("starting", "switching", "waking"):
        assert chat_tools._refusal(SimpleNamespace(state=changing), chat, action) == chat_tools.SWITCHING
    assert "switching its memory preset" in say(chat_tools.SWITCHING) and "Stop" in say(chat_tools.BUSY)


async def test_a_refused_regenerate_leaves_the_reply_its_turn_buttons_and_history_as_they_were(client, app_server,
                                                                                              tokenizer):
    # A question that fits beside a 16-token reply but not beside the half of the 10,240-token context that a
    # long reply reserves
    question = "Please read this: " + " ".join(["water"] * 7000)
    assert 5120 < len(tokenizer.encode(question)) < 10000
    await client.change_settings({"max_tokens": 16})
    reply = await client.ask(question)
    shown = reply.content
    await _until(lambda: (client.action(REGENERATE) or {}).get("forId") == reply.id)
    await client.change_settings({"max_tokens": 8192})
    before = set(client.messages)
    await client.click(client.action(REGENERATE))
    await _until(lambda: any("Not regenerated" in m.content for m in client.messages.values() if m.id not in before))
    refusal = next(m.content for m in client.messages.values() if "Not regenerated" in m.content)
    assert "only 5120 fit" in refusal and "kept as it was" in refusal, refusal
    await _until(lambda: (client.action(REGENERATE) or {}).get("forId") == reply.id)  # its buttons are back
    assert client.messages.get(reply.id) is reply and reply.content == shown, "the reply is shown as it was"
    resumed = await ChatClient(app_server.url, thread_id=client.thread_id).connect()
    try:
        texts = [text for kind, text in step_texts(resumed.resumed) if kind == "assistant_message"]
        assert texts == [shown], "the history holds the reply as it was"
    finally:
        await resumed.close()
    await client.change_settings({"max_tokens": 16})  # the question is still in the chat's prompt
    assert stats_of((await client.ask("And then?")).content)["prompt"] > 5120
