"""The app's own logic, hook by hook, inside a Chainlit context, with a fake engine (fast; no vLLM).

The same paths run for real, with the real engine and server, in test_app.py.
"""

import asyncio
import os

import pytest
from chainlit.context import init_http_context

from engine.errors import ContextTooLongError, ReplyFillsContextError
import harness.fake_engine
from harness.recorder import Recorder
from engine.reports import Stats
from history import writes
from lifetime.runtime import RUNTIME
from ui import broadcast

# No database here (the history is tested on the real server, test_history.py); set for this import only, as
# the servers other test files start inherit this process's environment.
os.environ["CHAT_HISTORY"] = "false"
RUNTIME.port_checked = True
import app  # noqa: E402  (after marking the port as checked: no server binds in these tests)

del os.environ["CHAT_HISTORY"]


def FakeEngine():  # noqa: N802 (the harness's fake, on the app's settings)
    return harness.fake_engine.FakeEngine(app.engine.settings)


def fresh_session() -> Recorder:
    context = init_http_context()
    context.emitter = Recorder(context.session)
    return context.emitter


@pytest.fixture
async def chat(monkeypatch):
    fresh_session()
    fake = FakeEngine()
    monkeypatch.setattr(app, "engine", fake)
    monkeypatch.setattr(broadcast, "broadcast", lambda key, **values: asyncio.sleep(0))
    await app.start_chat()
    return app.cl.context.emitter, fake


def user(text: str, id: str | None = None):
    message = app.cl.Message(content=text, author="User", type="user_message")
    if id:
        message.id = id
    return message


async def test_a_reply_shows_its_text_and_cost_and_joins_the_history(chat):
    shown, fake = chat
    await app.on_message(user("Hi"))
    reply = list(shown.shown.values())[-1]
    assert reply.startswith("Hello there, friend.")
    assert "first token 12 ms · 321 tok/s · 30 prompt + 3 reply tokens · 16 cached" in reply
    await app.on_message(user("Again"))
    assert fake.seen[-1] == [{"role": "user", "content": "Hi"},
                             {"role": "assistant", "content": "Hello there, friend."},
                             {"role": "user", "content": "Again"}]


async def test_a_reopened_chat_gets_its_turns_and_sidebar_back_on_the_running_preset(chat):
    fake = chat[1]
    fresh_session()  # Chainlit reopens a chat in a session of its own
    app.cl.context.session.chat_settings = {"temperature": 0.3, "max_tokens": 24, "preset": "4gb"}
    thread = {"id": "t1", "steps": [  # as Chainlit's data layer returns them (SQLite gives the metadata as text)
        {"id": "q1", "type": "user_message", "output": "Hi", "metadata": {}},
        {"id": "r1", "type": "assistant_message", "name": "ERNIE Chat", "output": "Hello\n\n*`first token ...`*",
         "metadata": '{"for": "q1", "answer": "Hello"}'},
        {"id": "n1", "type": "assistant_message", "name": "system", "output": "✅ Ready", "metadata": {}},
        {"id": "q2", "type": "user_message", "output": "never answered", "metadata": {}}]}
    await app.resume_chat(thread)
    prefs = (await app.chat_state.current(fake)).prefs
    assert (prefs.sampling.temperature, prefs.sampling.max_tokens, prefs.preset) == (0.3, 24, "cpu"), \
        "the chat's own sampling, on the preset that runs (reopening restarts nothing)"
    await app.on_message(user("Next"))
    assert fake.seen[-1] == [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"},
                             {"role": "user", "content": "Next"}]
    assert fake.switched == []


async def test_stop_keeps_the_partial_reply_in_the_chat_and_the_history(chat):
    shown, fake = chat
    fake.block.clear()
    task = asyncio.create_task(app.on_message(user("Tell me")))
    await asyncio.sleep(0.1)
    task.cancel()  # what Chainlit does on Stop
    with pytest.raises(asyncio.CancelledError):
        await task
    assert list(shown.shown.values())[-1] == "Hello\n\n*Stopped.*"
    fake.block.set()
    await app.on_message(user("Go on"))
    assert fake.seen[-1][1] == {"role": "assistant", "content": "Hello"}


async def test_an_edited_message_reruns_from_that_point(chat):
    _, fake = chat
    first = user("first", id="m-1")
    await app.on_message(first)
    await app.on_message(user("second"))
    first.content = "first, edited"
    await app.on_message(first)
    assert fake.seen[-1] == [{"role": "user", "content": "first, edited"}]


async def test_stop_aborts_the_running_request_in_the_engine(chat):
    _, fake = chat
    app.chat_state.made().request_id = "req-7"  # a reply being written
    await app.on_stop()
    assert fake.aborted == ["req-7"]


async def test_engine_errors_are_shown_and_the_message_is_not_kept(chat):
    shown, fake = chat
    fake.error = ContextTooLongError(5000, 3000, 4096, 1024)
    await app.on_message(user("x " * 5000))
    assert "needs 5000 tokens, but only 3000 fit" in list(shown.shown.values())[-1]
    fake.error = None
    await app.on_message(user("short"))
    assert fake.seen[-1] == [{"role": "user", "content": "short"}]


async def test_a_continue_that_cannot_run_leaves_the_reply_as_it_was_and_says_why(chat):
    shown, fake = chat
    fake.finish = "length"
    await app.on_message(user("Tell me a long story"))
    state = app.chat_state.made()
    reply, turns = state.reply, list(state.turns)
    before = shown.shown[reply.id]
    assert "'max new tokens' limit" in before and [a.name for a in reply.actions][0] == app.CONTINUE_ACTION
    fake.error = ReplyFillsContextError(10300, 10240)
    await app.continue_reply(reply.actions[0])
    assert "This reply cannot go on" in list(shown.shown.values())[-1]
    assert shown.shown[reply.id] == before and "*Stopped.*" not in before, "a refused Continue stopped nothing"
    assert state.turns == turns and [a.name for a in reply.actions][0] == app.CONTINUE_ACTION
    fake.error = None  # the button still works
    await app.continue_reply(reply.actions[0])
    assert fake.seen[-1][-1] == {"role": "assistant", "content": turns[-1]["content"]}
    assert shown.shown[reply.id].startswith(turns[-1]["content"] + "".join(fake.deltas))


@pytest.mark.parametrize("tool", ["regenerate", "continue"])
async def test_a_regenerate_or_continue_stopped_before_its_first_word_leaves_the_reply_as_it_was(chat, tool):
    shown, fake = chat
    fake.finish = "length"
    await app.on_message(user("Name a colour"))
    state = app.chat_state.made()
    reply, turns, before = state.reply, list(state.turns), dict(shown.shown)
    fake.deltas, fake.finish = ["", "Blue"], None  # the engine took the request; its first word is yet to come
    fake.block.clear()
    name = app.REGENERATE_ACTION if tool == "regenerate" else app.CONTINUE_ACTION
    pressing = asyncio.create_task(getattr(app, f"{tool}_reply" if tool == "continue" else tool)(
        next(a for a in reply.actions if a.name == name)))
    await asyncio.sleep(0.1)
    await app.on_stop()
    await pressing
    assert shown.shown == before, "the chat shows the reply as it was, and no empty one"
    assert state.turns == turns and state.reply is reply, "the prompt and the latest reply are as they were"
    assert {a.name for a in reply.actions} >= {app.REGENERATE_ACTION, app.CONTINUE_ACTION}, "its tools are back"


async def test_an_engine_failure_mid_reply_keeps_the_partial_text_and_says_why(chat):
    from engine.errors import EngineDiedError

    shown, fake = chat
    fake.error_mid_reply = EngineDiedError("EngineDeadError")
    await app.on_message(user("Tell me"))
    texts = list(shown.shown.values())
    assert "Hello\n\n*Stopped.*" in texts
    assert "stopped unexpectedly" in texts[-1] and "restarts by itself" in texts[-1]
    fake.error_mid_reply = None
    await app.on_message(user("Again"))
    assert fake.seen[-1][1] == {"role": "assistant", "content": "Hello"}


async def test_empty_messages_and_status_never_reach_the_engine(chat):
    shown, fake = chat
    await app.on_message(user("   "))
    assert "empty" in list(shown.shown.values())[-1]
    assert fake.seen == []


async def test_settings_are_validated_and_a_new_preset_switches_the_engine(chat):
    shown, fake = chat
    await app.on_settings({"temperature": "warm"})
    assert "Settings not applied: temperature" in list(shown.shown.values())[-1]
    await app.on_settings({"temperature": 0.3, "max_tokens": 64, "preset": "6gb"})
    assert fake.switched == ["6gb"]
    prefs = (await app.chat_state.current(fake)).prefs
    assert prefs.sampling.temperature == 0.3 and prefs.sampling.max_tokens == 64


async def test_text_typed_beside_the_status_chip_is_answered_after_the_table(chat):
    shown, fake = chat
    question = user("What is a KV cache?")
    question.command = "Status"
    await app.on_message(question)
    assert any(text.startswith("**Engine status**") and "| Engine | Now |" in text for text in shown.shown.values())
    assert fake.seen[-1] == [{"role": "user", "content": "What is a KV cache?"}]


@pytest.mark.parametrize("chip", ["Export", "Usage"])
async def test_text_typed_beside_a_chip_that_acts_at_once_is_answered_after_it(chat, chip):
    shown, fake = chat
    question = user("What is a KV cache?")
    question.command = chip
    await app.on_message(question)
    assert fake.seen and fake.seen[-1] == [{"role": "user", "content": "What is a KV cache?"}]


def test_a_cut_reply_names_the_limit_that_applied():
    from ui import text

    cut = dict(ttft_s=0.01, decode_tokens_per_s=100.0, prompt_tokens=1900, generated_tokens=148, cached_tokens=0,
               finish_reason="length", dropped_messages=0, total_s=1.0, max_tokens=148, max_model_len=2048)
    assert "hit the 'max new tokens' limit (148)" in text.notes(Stats(**cut), False)[0]
    note = text.notes(Stats(**cut, context_full=True), False)[0]
    assert "filled the context (2048 tokens" in note and "max new tokens" not in note


def test_the_max_tokens_slider_follows_the_running_presets_context():
    from engine import presets
    from ui import sidebar

    settings = app.engine.settings

    def slider_max(*args):
        return next(w for w in sidebar.widgets(*args) if w.id == "max_tokens").max

    assert slider_max(settings, sidebar.defaults(settings, "4gb")) == 4096
    assert slider_max(settings, sidebar.defaults(settings, "auto"), presets.BUILT_IN["2gb"]) == 2048
    assert slider_max(settings, sidebar.defaults(settings, "auto")) == 8192  # before a start: the server's bound


async def test_a_code_block_left_open_by_a_stopped_reply_is_closed_before_the_notes(chat):
    shown, fake = chat
    fake.block.clear()
    fake.deltas = ["Here:\n```python\nprint(", "'hi')"]
    task = asyncio.create_task(app.on_message(user("Code please")))
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert list(shown.shown.values())[-1] == "Here:\n```python\nprint(\n```\n\n*Stopped.*"


async def test_messages_made_together_do_not_pause_the_event_loop_and_keep_their_order(chat, monkeypatch):
    """For each user message Chainlit makes a message and a step, each pausing 1 ms on the loop every chat
    shares (32 chats sending at once: 64 ms before the last reaches the engine); the app drops that pause.
    Making them sleeps nowhere, and each step still gets a time of its own, in order."""
    import time

    import chainlit as cl

    pauses = []
    monkeypatch.setattr(time, "sleep", lambda seconds: pauses.append(seconds))
    made = [(cl.Message(content=f"message {i}"), cl.Step(name=f"step {i}")) for i in range(32)]
    assert pauses == [], f"making 32 messages and steps paused the event loop {len(pauses)} times"
    stamps = [step.created_at for _, step in made]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps), "each step keeps its own, later time"


async def test_a_reply_does_not_wait_for_the_sidebar_to_be_stored(chat, monkeypatch):
    """A new chat's changed sidebar is stored with its first message; the database may be busy with other chats'
    writes, and the reply starts without waiting for it. The write still lands."""
    shown, fake = chat

    class BusyHistory:
        def __init__(self):
            self.free, self.stored = asyncio.Event(), []

        async def update_thread(self, thread_id, metadata=None, **_):
            await self.free.wait()
            self.stored.append(metadata)

    busy = BusyHistory()
    monkeypatch.setattr(app, "chat_history", busy)
    app.cl.context.session.has_first_interaction = True
    await app.on_settings({"temperature": 0.3, "max_tokens": 24})
    await asyncio.wait_for(app.on_message(user("Hi")), timeout=30)
    assert list(shown.shown.values())[-1].startswith("Hello there, friend.")
    busy.free.set()
    await asyncio.wait_for(asyncio.gather(*writes.WRITING), timeout=30)
    [stored] = [metadata["chat_settings"] for metadata in busy.stored]
    assert (stored["temperature"], stored["max_tokens"]) == (0.3, 24), "the sidebar in use is what is kept"


async def test_a_chats_sidebar_writes_land_in_the_order_it_changed(chat, monkeypatch):
    """Two quick changes of the sidebar: the stored values are the later ones, even when the first write is slow
    (on PostgreSQL two writes may run at once)."""
    shown, fake = chat

    class SlowFirstWrite:
        def __init__(self):
            self.free, self.stored = asyncio.Event(), []

        async def update_thread(self, thread_id, metadata=None, **_):
            if not self.stored and metadata["chat_settings"]["max_tokens"] == 24:
                await self.free.wait()
            self.stored.append(metadata["chat_settings"]["max_tokens"])

    slow = SlowFirstWrite()
    monkeypatch.setattr(app, "chat_history", slow)
    app.cl.context.session.has_first_interaction = True
    for max_tokens in (24, 48):
        writes.keep_settings(slow, {"temperature": 0.3, "max_tokens": max_tokens})
    await asyncio.sleep(0.1)
    slow.free.set()
    await asyncio.wait_for(asyncio.gather(*writes.WRITING), timeout=30)
    assert slow.stored == [24, 48], "the later sidebar is the one kept"


async def test_a_message_before_the_chat_opened_is_answered_and_the_late_opening_keeps_its_turn(monkeypatch):
    shown = fresh_session()
    fake = FakeEngine()
    monkeypatch.setattr(app, "engine", fake)
    await app.on_message(user("Hi"))  # Chainlit ran the message's task before the chat's opening
    assert list(shown.shown.values())[-1].startswith("Hello there, friend.")
    await app.start_chat()
    await app.on_settings({"temperature": 0.3, "max_tokens": 64, "preset": "cpu"})
    await app.on_message(user("Again"))
    assert fake.seen[-1][0] == {"role": "user", "content": "Hi"}, "the opening did not start the chat anew"


async def test_an_error_inside_a_hook_is_told_in_the_chat(chat):
    shown, fake = chat
    fake.saturated = lambda *who: {}["no such key"]
    await app.on_message(user("Hi"))
    told = list(shown.shown.values())[-1]
    assert "answering your message failed (KeyError" in told and "Send it again" in told


async def test_an_import_box_answered_with_a_file_that_is_no_json_is_refused_by_its_name(chat, monkeypatch):
    from chainlit.types import AskFileResponse

    from ui import chat_files, file_ask

    shown, fake = chat

    async def picked(*args, **kwargs):  # the upload box's answer: Chainlit's AskFileResponse, which has no `mime`
        return [AskFileResponse(id="f-1", name="notes.txt", path=__file__, size=10, type="text/plain")]

    monkeypatch.setattr(file_ask, "asked", picked)
    await chat_files.import_chat(fake, object(), user(""))
    assert "notes.txt" in list(shown.shown.values())[-1] and "JSON" in list(shown.shown.values())[-1]
