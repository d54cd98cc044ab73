"""The history's writes while a chat runs: every change to a message shown and stored by one path
(`show_and_store`), a streaming reply saved as it goes, the sidebar's values stored when they change, notices shown
but never stored, and a failing database said once per chat.

A reply is written every `SAVE_EVERY_S` while it streams, marked cut off until the finished reply replaces it, so a
killed server loses at most that much. None of these writes holds a reply up: each runs in the background.
"""

import asyncio
import time
from dataclasses import dataclass

from chainlit_door import sessions as door
from chainlit_door.server import now_stamp
from history.schema import reason
from history.words import say
from lifetime.tasks import spawn

SAVE_EVERY_S = 1.0  # a reply being written reaches the database at least this often
CUT_OFF_NOTE = say("cut_off", None)  # in English: a reply ends with the note in its chat's language
WRITING: set[asyncio.Task] = set()  # sidebar writes under way (`keep_settings`)


@dataclass
class ChatRecord:
    """What the history knows of one open chat: kept in memory with its session, never stored."""

    told_failing: bool = False  # whether the chat was told that saving failed
    settings: dict | None = None  # the sidebar values last stored
    write: asyncio.Task | None = None  # the last write of its sidebar (`keep_settings`)


def record_of(session) -> ChatRecord:
    """The record of the chat whose Chainlit session is `session`: made on first use, gone with the session."""
    return door.kept_with(session, "history_record", ChatRecord)


async def tell_failing(where: str, error: BaseException) -> None:
    """Once per chat: a disk that is full (or read-only) fails some writes and not others, so no "saved again"."""
    session = _chat_session()
    if session is None or record_of(session).told_failing:
        return
    record_of(session).told_failing = True
    if _not_text(error):  # the text, not the disk: nothing the user can free or fix on the server
        await _notice(say("failing.text", session.language, where=where, reason=reason(error)))
        return
    await _notice(say("failing", session.language, where=where, reason=reason(error)))


def _not_text(error: BaseException | None) -> bool:
    """Whether `error` (or what caused it) is text a database cannot encode, not a failing disk."""
    for _ in range(8):  # a driver's error wraps the cause a few levels deep at most
        if error is None:
            return False
        if isinstance(error, UnicodeError):
            return True
        error = getattr(error, "orig", None) or error.__cause__ or error.__context__
    return False


def _chat_session():
    """This chat's Chainlit session, or None outside a chat (sign-in, the history list)."""
    return door.session_or_none()


async def _notice(content: str) -> None:
    import chainlit as cl

    message = cl.Message(content=content, author="system")
    message.persisted = True  # shown, never written: the database is what fails
    await message.send()


async def show_and_store(message, layer) -> None:
    """The one way a changed message reaches the page and the history (a reply finished, continued, stopped or put
    back, an edited question). Chainlit's `send()` writes only a message not saved before, and its `update()`
    queues the write until the chat's next typed message (a Continue pressed in a reopened chat would wait for one,
    then land stale): a message already saved is sent to the page and written again here, at once (the layer's
    write replaces the stored step by its id)."""
    if layer is None or not message.persisted or message.id in layer.unstored:
        await message.send()
        return
    await message.send()  # the page only: Chainlit writes nothing for a message it saved before
    await layer.create_step(message.to_dict())


def transient(message, layer) -> None:
    """Show `message` without storing it (a notice removed moments later, like "every slot is busy")."""
    message.persisted = True
    if layer is not None:
        layer.unstored.add(message.id)


class ReplySaver:
    """Writes a reply to the history while it streams, marked as cut off until the finished reply replaces it."""

    def __init__(self, reply, layer):
        self.reply, self.layer = reply, layer
        self.note = say("cut_off", door.language())  # the chat's language, read in the chat's task
        self.saved_at = time.monotonic()
        self.task: asyncio.Task | None = None

    def shown(self) -> None:
        """The user now sees the reply's content; write it if the last write is done and old enough."""
        if self.layer is None or (self.task and not self.task.done()):
            return
        if time.monotonic() - self.saved_at < SAVE_EVERY_S:
            return
        self.saved_at = time.monotonic()
        if not self.reply.created_at:  # stamped now, as send() would: the history is ordered by it
            self.reply.created_at = now_stamp()
        step, content = self.reply.to_dict(), self.reply.content
        metadata = {**self.reply.metadata, "answer": content, "cut_off": True}
        if metadata.get("versions"):  # a regenerated reply's earlier answers (ui/versions.py), this one's as shown
            metadata["versions"] = [*metadata["versions"][:-1], f"{content}\n\n{self.note}"]
        step.update(output=f"{content}\n\n{self.note}", streaming=False, metadata=metadata)
        self.task = spawn(self.layer.create_step(step))

    async def settle(self) -> None:
        """Wait for a write in flight, so it cannot land after (and over) the finished reply."""
        if self.task is not None:
            await asyncio.gather(self.task, return_exceptions=True)


def keep_settings(layer, values: dict) -> None:
    """Store the chat's sidebar `values` (its preferences in use: ui/sidebar.values) with it when they changed, as
    soon as the chat is in the history (a killed server never gets to store them at the tab's close, as Chainlit
    does).

    Written in the background: a reply must not wait for it. A new chat's first message queues the thread's
    creation and the question ahead of it on the database's one writer, so many new chats asking at once would
    each wait for all of those writes before reaching the engine (docs/benchmarks.md, "History")."""
    session = door.session()
    record = record_of(session)
    if layer is None or not session.has_first_interaction or record.settings == values:
        return
    record.settings, previous = values, record.write

    async def write():  # after the chat's previous write: on PostgreSQL two writes may run at once, the older last
        if previous is not None:
            await asyncio.gather(previous, return_exceptions=True)
        await layer.update_thread(session.thread_id, metadata={"chat_settings": values})

    record.write = spawn(write(), WRITING)
