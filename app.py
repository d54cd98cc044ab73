"""Chainlit hooks: turn chat events into calls on the shared engine.

Thin on purpose: no vLLM, no prompts, no token ids here (see engine/ and ui/).
Run with `chainlit run app.py -w`; the port comes from `.env`.
"""

import asyncio
import time
import uuid
from dataclasses import replace

import chainlit as cl

from ui.reload import pin_engine_modules, restore_engine_modules

restore_engine_modules()  # a `-w` reload must reuse the running engine's classes
from engine.engine import shared_engine  # noqa: E402
from engine.errors import ChatError  # noqa: E402
from engine.records import Stats  # noqa: E402
from ui import (attachments, chat_state, connection, guard, history, pauses, sessions, sidebar, signin,  # noqa: E402
                start, text)
from ui.api_route import GUARDED_PATHS, open_api  # noqa: E402
from ui.broadcast import broadcast  # noqa: E402
from ui.failures import reported  # noqa: E402
from ui.port import chosen_port, exit_if_port_taken, is_loopback  # noqa: E402

pin_engine_modules()
pauses.drop_constructor_pauses()  # Chainlit's 1 ms sleep per message would hold every chat's stream
connection.tolerate_quiet_servers()  # a busy server must not cost a chat its reply
connection.resend_replies_on_reconnect()  # nor a dropped connection that comes back
sessions.continue_threads_after_restarts()  # nor a restart of the server under an open tab

CHAINLIT_STOP_NOTICE = "Task manually stopped."
FLUSH_EVERY_S = 0.04  # the browser re-renders the whole message per event: batch tokens
PROMPT_KEYS = ("role", "content", "attachments")  # what of a turn the engine is given (not its message id)

exit_if_port_taken()
engine = shared_engine()
open_api(engine)  # the OpenAI-compatible API at /v1, on the same engine
attachments.own_upload_folder()
chat_history = history.install(engine.settings, extra=[signin.LOGINS_TABLE, sessions.SESSIONS_TABLE, attachments.TABLE,
                                                      attachments.INDEX])  # None: off
if chat_history is not None:
    chat_history.on_delete = lambda thread_id: sessions.end_deleted(thread_id, engine.abort, chat_state.forget)
loopback = is_loopback(chosen_port()[0])
signin.install(loopback, chat_history, engine.settings.history_db.parent)
guard.install(loopback=loopback, signin=chat_history is not None, settings=engine.settings, api_paths=GUARDED_PATHS)


@cl.set_starters
async def starters(user=None, language=None):
    return text.STARTERS


@cl.on_chat_start
@reported("opening the chat")
async def start_chat():
    await chat_state.current(engine)


@cl.on_chat_resume
@reported("reopening the chat")
async def resume_chat(thread: dict):
    """A chat reopened from the history: its turns go back into the prompt, its sidebar comes back."""
    await chat_state.current(engine, thread)


@cl.on_message
@reported("answering your message")
async def on_message(message: cl.Message):
    if message.command == "Status" or message.content.strip() == "/status":
        await cl.Message(content=text.status_text(engine.status()), author="system").send()
        if message.command != "Status" or message.content.strip() in ("", "/status"):
            return  # text typed beside the Status chip is a question too: answer it below
    if not message.content.strip() and not message.elements:
        await cl.Message(content="Your message is empty: type something to ask.", author="system").send()
        return
    asked = await attachments.question(message)  # None: a file was refused, and the chat told why
    if asked is None:
        return
    chat = await chat_state.current(engine)
    turns = _turns_before(chat, message.id)
    if not await start.ensure_engine(engine):
        cl.user_session.set("pending", asked)  # answered if "Try again" brings the engine up
        return
    await reply_to(chat, turns, asked)


@cl.action_callback(start.RETRY_ACTION)
@reported("starting the engine again")
async def retry_start(action: cl.Action):
    await action.remove()
    pending = cl.user_session.get("pending")
    if await start.ensure_engine(engine, retry=True) and pending is not None:
        cl.user_session.set("pending", None)
        chat = await chat_state.current(engine)
        await reply_to(chat, _turns_before(chat, pending["id"]), pending)


def _turns_before(chat, message_id: str) -> list[dict]:
    """The chat so far; an edited message reruns, so everything from it on is forgotten."""
    turns = chat.turns
    for index, turn in enumerate(turns):
        if turn.get("id") == message_id:
            del turns[index:]
            break
    return turns


async def reply_to(chat, turns: list[dict], asked: dict) -> None:
    """Answer the user's turn `asked` (its words and attachments, from `attachments.question`)."""
    prefs = chat.prefs
    history.keep_settings(chat_history)
    sessions.remember(chat_history)
    attachments.keep(chat_history, asked)
    request_id = uuid.uuid4().hex
    cl.user_session.set("request_id", request_id)
    prompt = [{key: t[key] for key in PROMPT_KEYS if key in t} for t in [*turns, asked]]
    # flushed_at starts at 0 so the first token shows at once; later ones are batched
    reply, pending, flushed_at, stats = cl.Message(content=""), "", 0.0, None
    reply.metadata = {"for": asked["id"]}  # which question it answers, to rebuild the prompt of a reopened chat
    saver = history.ReplySaver(reply, chat_history)
    chat.reply, chat.replying = reply, True
    queued = None
    if engine.saturated():
        queued = cl.Message(content="⏳ Every slot of the engine is busy; your reply starts as soon as one frees up.",
                            author="system")
        history.transient(queued, chat_history)
        await queued.send()
    try:
        async for item in engine.stream(prompt, prefs.sampling, prefs.system_prompt, request_id):
            if queued is not None:
                await queued.remove()
                queued = None
            if isinstance(item, Stats):
                stats = item
                continue
            pending += item
            if time.monotonic() - flushed_at >= FLUSH_EVERY_S:
                await reply.stream_token(pending)
                pending, flushed_at = "", time.monotonic()
                saver.shown()
    except asyncio.CancelledError:  # Stop: keep what was written
        await finish(turns, asked, reply, reply.content + pending, None, prefs.show_stats, saver)
        raise
    except ChatError as error:
        if reply.content or pending:  # the engine failed mid-reply: keep what was written
            await finish(turns, asked, reply, reply.content + pending, None, prefs.show_stats, saver)
        await cl.ErrorMessage(content=str(error), author="system").send()
        return
    finally:
        cl.user_session.set("request_id", None)
        chat.replying = False
        if queued is not None:
            await queued.remove()
    await finish(turns, asked, reply, reply.content + pending, stats, prefs.show_stats, saver)


async def finish(turns, asked, reply, answer: str, stats: Stats | None, show_stats: bool, saver) -> None:
    """Record the turn in the chat's turns and show (and save) the reply with its notes and cost."""
    sent = attachments.as_sent(asked, stats)
    if sent is not asked:
        attachments.keep(chat_history, sent)
    turns += [sent, {"role": "assistant", "content": answer}]
    reply.metadata = {**reply.metadata, "answer": answer}
    await saver.settle()  # a write of the streaming reply must not land over the finished one
    stopped = stats is None or stats.finish_reason == "abort"
    extra = ["*Stopped.*"] if stats is None else text.notes(stats, stopped)
    if stats is not None and show_stats:
        extra.append(text.stats_line(stats))
    reply.content = "\n\n".join([text.close_code_fence(answer), *extra]) if answer else "\n\n".join(extra)
    await reply.send()


@cl.on_settings_update
@reported("changing the settings")
async def on_settings(values: dict):
    opening = chat_state.made() is None  # the chat's opening sends its sidebar meanwhile, with the old values
    chat = await chat_state.current(engine)
    prefs = chat.prefs
    try:
        new = sidebar.parse(values, prefs, engine.settings)
    except ValueError as error:
        await cl.ErrorMessage(content=f"Settings not applied: {error}", author="system").send()
        return
    chat.prefs = new
    history.keep_settings(chat_history)
    if new.preset != prefs.preset:
        await switch_preset(chat, new.preset)
    elif opening:
        await chat_state.send_sidebar(engine, new)


async def switch_preset(chat, name: str) -> None:
    note = cl.Message(content=f"⏳ Switching the memory preset to '{name}'…", author="system")
    await note.send()

    async def report(progress):
        note.content = text.progress_line(f"Switching to '{name}'", progress)
        await note.update()

    async def tell_others():
        await broadcast(f"🔁 Another chat is switching the memory preset to '{name}'; replies pause until it is ready.")

    try:
        if await engine.switch_preset(name, report, before_stop=tell_others):
            await broadcast(f"✅ The memory preset is now '{name}'.")
    except ChatError as error:
        note.content = f"❌ {error}"
        await note.update()
        await broadcast(f"The preset switch failed; '{engine.preset_name}' is running.")
    finally:  # the sidebar and this chat's preference show what runs, also after a failure
        chat.prefs = replace(chat.prefs, preset=engine.preset_name)
        await chat_state.send_sidebar(engine, chat.prefs)


@cl.on_stop
@reported("stopping the reply")
async def on_stop():
    await abort_running_reply()
    # Chainlit posts a notice of its own before this hook; the stopped reply already ends in "*Stopped.*"
    for shown in reversed(cl.chat_context.get()):
        if shown.content == CHAINLIT_STOP_NOTICE:
            await shown.remove()
            break


async def abort_running_reply() -> None:
    # Chainlit cancels on_message itself, but not a rerun started by an edit: abort in the engine too.
    request_id = cl.user_session.get("request_id")
    if request_id:
        await engine.abort(request_id)


@cl.on_chat_end
async def on_chat_end():
    request_id = cl.user_session.get("request_id")
    if request_id:  # the tab may come back (a network blip): the reply goes on until the chat really ends
        sessions.abort_when_gone(lambda: engine.abort(request_id))


@cl.on_app_startup
async def preload():
    engine.expect_stop_on_signals()  # from Ctrl-C or SIGTERM on, the engine's end is no crash to report
    # Importing vLLM takes seconds: do it while the user opens the browser, not in the first chat.
    asyncio.create_task(asyncio.to_thread(engine.preload))


@cl.on_app_shutdown
async def on_shutdown():
    await asyncio.to_thread(engine.shutdown)
