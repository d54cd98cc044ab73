"""Chainlit hooks: turn chat events into calls on the shared engine.

Thin on purpose: no vLLM, no prompts, no token ids here (see engine/ and ui/); `wiring.install()` sets up the
rest (Chainlit's patches, the engine, the API, the history, the sign-in and the guard).
Run with `chainlit run app.py -w`; the port comes from `.env`.
"""

import asyncio

import chainlit as cl

from chainlit_door.patches import restore_engine_modules

restore_engine_modules()  # a `-w` reload must reuse the running engine's classes
from boot import wiring  # noqa: E402
from history.usage import write_pending  # noqa: E402
from history.writes import keep_settings  # noqa: E402
from lifetime.tasks import spawn  # noqa: E402
from ui import (attachments, branches, chat_files, chat_state, chat_tools, chips, library, my_defaults,  # noqa: E402
                oversized, sessions, settings_first, sidebar, start_note, text, versions)
from ui.failures import reported  # noqa: E402
from ui.preset_switch import switch_preset  # noqa: E402
from ui.reply import CONTINUE_ACTION, REGENERATE_ACTION, offer_tools, reply_to, stop, stored_stats  # noqa: E402
from ui.words import say  # noqa: E402

engine, chat_history = wiring.install()


@cl.set_starters
async def starters(user=None, language=None):
    return text.starters(language)


@cl.on_chat_start
@reported("opening the chat")
async def start_chat():
    await chat_state.current(engine)
    await chips.offer()


@cl.on_chat_resume
@reported("reopening the chat")
async def resume_chat(thread: dict):
    """A chat reopened from the history: its turns go back into the prompt, its sidebar comes back."""
    await chat_state.current(engine, thread)
    await chips.offer()


@cl.on_message
@reported("answering your message")
async def on_message(message: cl.Message):
    if (size := oversized.size_of({"metadata": message.metadata})) is not None:  # over the socket's 1 MB
        await oversized.refuse(size)
        return
    if await chips.dispatch(engine, chat_history, message):  # a chip, pressed or typed as its slash command
        return
    if not message.content.strip() and not message.elements:
        await cl.Message(content=say("message.empty"), author="system").send()
        return
    asked = await attachments.question(message)  # None: a file was refused, and the chat told why
    if asked is None:
        return
    await settings_first.applied(cl.context.session)  # a settings change sent before this message applies to it
    chat = await chat_state.current(engine)
    prefs = chat.prefs
    asked, found = await library.with_passages(chat_history, asked, prefs.library, engine.max_model_len,
                                               prefs.sampling.max_tokens, prefs.system_prompt)
    turns = chat.turns_before(message.id)
    if not await start_note.ensure_engine(engine, chat):
        chat.waiting = asked  # answered if "Try again" brings the engine up
        return
    await reply_to(engine, chat_history, chat, turns, asked, found=found)


@cl.action_callback(start_note.RETRY_ACTION)
@reported("starting the engine again")
async def retry_start(action: cl.Action):
    await action.remove()
    chat = await chat_state.current(engine)
    if await start_note.ensure_engine(engine, chat, retry=True) and chat.waiting is not None:
        asked, chat.waiting = chat.waiting, None
        await reply_to(engine, chat_history, chat, chat.turns_before(asked["id"]), asked)


@cl.action_callback(CONTINUE_ACTION)
@reported("continuing the reply")
async def continue_reply(action: cl.Action):
    await chat_tools.continue_reply(engine, chat_history, action)


@cl.action_callback(REGENERATE_ACTION)
@reported("regenerating the reply")
async def regenerate(action: cl.Action):
    await chat_tools.regenerate(engine, chat_history, action)


@cl.action_callback(versions.PREVIOUS)
@cl.action_callback(versions.NEXT)
@reported("showing another version of the reply")
async def page_versions(action: cl.Action):
    await versions.page(chat_state.made(), action)


@cl.action_callback(branches.PREVIOUS)
@cl.action_callback(branches.NEXT)
@reported("showing another version of the question")
async def switch_branch(action: cl.Action):
    await branches.switch(chat_state.made(), chat_history, action, offer_tools, stored_stats)


@cl.action_callback(chat_files.EXPORT_ALL)
@reported("exporting all your chats")
async def export_all(action: cl.Action):
    await chat_files.export_all(engine, chat_history)


@cl.on_settings_update
@reported("changing the settings")
async def on_settings(values: dict):
    opening = chat_state.made() is None  # the chat's opening sends its sidebar meanwhile, with the old values
    chat = await chat_state.current(engine)
    prefs = chat.prefs
    try:
        new = sidebar.parse(values, prefs, engine.settings)
    except ValueError as error:  # Chainlit has put the refused values in the session: the ones in use go back
        await chat_state.send_sidebar(engine, prefs)
        await cl.ErrorMessage(content=say("settings.not_applied", why=error),
                              author="system").send()
        return
    chat.prefs = new
    await my_defaults.follow(prefs, new)
    keep_settings(chat_history, sidebar.values(new))
    if new.preset != prefs.preset:
        await switch_preset(engine, chat, new.preset)
    elif opening:
        await chat_state.send_sidebar(engine, new)


@cl.on_stop
@reported("stopping the reply")
async def on_stop():
    await stop(engine, chat_state.made())


@cl.on_chat_end
async def on_chat_end():
    chat = chat_state.made()
    request_id = chat and chat.request_id
    if request_id:  # the tab may come back (a network blip): the reply goes on until the chat really ends
        sessions.abort_when_gone(lambda: engine.abort(request_id))


@cl.on_app_startup
async def preload():
    engine.expect_stop_on_signals()  # from Ctrl-C or SIGTERM on, the engine's end is no crash to report
    # Importing vLLM takes seconds: do it while the user opens the browser, not in the first chat.
    spawn(asyncio.to_thread(engine.preload))


@cl.on_app_shutdown
async def on_shutdown():
    await asyncio.to_thread(engine.shutdown)
    await write_pending()  # the last second's usage, the requests the shutdown ended among it
