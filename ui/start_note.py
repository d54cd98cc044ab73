"""The shared engine's start as one chat sees it: one progress note, and a failure with "Try again".

Everything in a chat that waits for the start (the chat opening, a message sent meanwhile) shares
one note. The engine remembers a failed start, so a later message gets the error at once instead
of waiting for the same failure again; "Try again" (or a preset switch) starts it anew.
"""

import asyncio

import chainlit as cl

from engine.errors import ChatError
from tasks import spawn
from ui import text
from ui.words import error_text, say

RETRY_ACTION = "retry_start"


async def ensure_engine(engine, chat, keep_note: bool = False, retry: bool = False) -> bool:
    """Start the shared engine if needed, showing it in `chat` (a ui.chat_state.ChatState); False when it could
    not start."""
    if engine.ready:
        return True
    if chat.start is None or chat.start.done():
        chat.start = spawn(_show_start(engine, keep_note, retry))
    return await asyncio.shield(chat.start)


async def _show_start(engine, keep_note: bool, retry: bool) -> bool:
    waking = engine.state in ("falling asleep", "asleep", "waking")
    what = say("start.waking" if waking else "start.starting")
    note = cl.Message(content=f"⏳ {what}…", author="system")
    await note.send()
    notice = ""

    async def report(progress):
        nonlocal notice
        notice = progress.notice
        note.content = text.progress_line(what, progress)
        await note.update()

    try:
        await engine.ensure_started(report, retry=retry)
    except ChatError as error:
        note.content = f"❌ {error_text(error)}"
        await note.update()
        await cl.Action(name=RETRY_ACTION, payload={}, label=say("start.retry"), icon="refresh-cw").send(for_id=note.id)
        return False
    if not keep_note and not notice:  # a note that tells something (e.g. which preset auto chose) stays
        await note.remove()
    return True
