"""The shared engine's start as one chat sees it: one progress note, and a failure with "Try again".

Everything in a chat that waits for the start (the chat opening, a message sent meanwhile) shares one note; the
opening alone shows none, so that the welcome page stays (a line by the message box and the Status chip tell the
start's progress: ui/start_line.py). The engine
remembers a failed start, so a later message gets the error at once instead of waiting for the same failure again;
"Try again" (or a preset switch) starts it anew.
"""

import asyncio

import chainlit as cl

from engine.errors import ChatError
from lifetime.tasks import spawn
from ui import start_line, text
from ui.words import error_text, say

RETRY_ACTION = "retry_start"


async def ensure_engine(engine, chat, quiet: bool = False, retry: bool = False) -> bool:
    """Start the shared engine if needed, showing it in `chat` (a ui.chat_state.ChatState); False when it could
    not start. `quiet`: the chat's opening, whose welcome page (logo, starters) must stay: a message in the chat
    would replace it, so the note shows only once a message waits for the start, or the start fails."""
    if engine.ready:
        return True
    if chat.start is None or chat.start.done():
        waking = engine.state in ("falling asleep", "asleep", "waking")
        chat.start_shown = _Note(say("start.waking" if waking else "start.starting"), quiet)
        chat.start = spawn(_show_start(engine, chat.start_shown, retry))
    elif not quiet:
        await chat.start_shown.show()  # a message now waits for a start that was quiet until now
    return await asyncio.shield(chat.start)


class _Note:
    """The start's note in one chat: sent at once, or (quiet) when first needed, with the latest progress."""

    def __init__(self, what: str, quiet: bool):
        self.what, self.quiet, self.content = what, quiet, f"⏳ {what}…"
        self.message: cl.Message | None = None

    async def show(self) -> None:
        if self.message is None:
            self.message = cl.Message(content=self.content, author="system")
            await self.message.send()

    async def say(self, content: str) -> None:
        self.content = content
        if self.message is not None:
            self.message.content = content
            await self.message.update()


async def _show_start(engine, note: _Note, retry: bool) -> bool:
    if not note.quiet:
        await note.show()
    notice = ""

    async def report(progress):
        nonlocal notice
        notice = progress.notice
        start_line.note(progress)
        await note.say(text.progress_line(note.what, progress))

    try:
        await engine.ensure_started(report, retry=retry)
    except ChatError as error:
        await note.say(f"❌ {error_text(error)}")
        await note.show()
        await cl.Action(name=RETRY_ACTION, payload={}, label=say("start.retry"), icon="refresh-cw").send(
            for_id=note.message.id)
        return False
    if note.message is not None and not notice:  # a note that tells something (e.g. which preset auto chose) stays
        await note.message.remove()
    return True
