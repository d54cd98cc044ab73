"""A reply as the chat shows it: streamed in batches of tokens, saved while it streams, and finished with its
notes and cost line, also when it is stopped or the engine fails midway (what was written is kept).

The browser re-renders the whole message on each event, so tokens are sent at most every `FLUSH_EVERY_S`; the
first one at once. The reply's turn joins the chat's turns only when it is finished, as the model read it.
"""

import asyncio
import time
import uuid
from dataclasses import dataclass

import chainlit as cl

from engine.errors import ChatError
from engine.reports import Stats
from history.writes import ReplySaver, keep_settings, transient
from ui import attachments, sessions, text

FLUSH_EVERY_S = 0.04  # the browser re-renders the whole message per event: batch tokens
PROMPT_KEYS = ("role", "content", "attachments")  # what of a turn the engine is given (not its message id)
CHAINLIT_STOP_NOTICE = "Task manually stopped."
BUSY_NOTICE = "⏳ Every slot of the engine is busy; your reply starts as soon as one frees up."


@dataclass
class Reply:
    """One reply being written: the question it answers, the message that shows it, what is not shown yet."""

    layer: object  # the history's data layer, or None
    turns: list[dict]  # the chat's turns before the question; the finished turn is added to them
    asked: dict
    message: cl.Message
    saver: ReplySaver
    show_stats: bool
    pending: str = ""
    flushed_at: float = 0.0  # 0: the first token shows at once; later ones are batched

    @property
    def written(self) -> str:
        return self.message.content + self.pending

    async def add(self, delta: str) -> None:
        self.pending += delta
        if time.monotonic() - self.flushed_at >= FLUSH_EVERY_S:
            await self.message.stream_token(self.pending)
            self.pending, self.flushed_at = "", time.monotonic()
            self.saver.shown()

    async def finish(self, stats: Stats | None) -> None:
        """Record the turn in the chat's turns and show (and save) the reply with its notes and cost;
        `stats` None: it was stopped or cut by a failure."""
        answer = self.written
        sent = attachments.as_sent(self.asked, stats)
        if sent is not self.asked:
            attachments.keep(self.layer, sent)
        self.turns += [sent, {"role": "assistant", "content": answer}]
        self.message.metadata = {**self.message.metadata, "answer": answer}
        await self.saver.settle()  # a write of the streaming reply must not land over the finished one
        stopped = stats is None or stats.finish_reason == "abort"
        extra = ["*Stopped.*"] if stats is None else text.notes(stats, stopped)
        if stats is not None and self.show_stats:
            extra.append(text.stats_line(stats))
        self.message.content = "\n\n".join([text.close_code_fence(answer), *extra]) if answer else "\n\n".join(extra)
        await self.message.send()


def _begin(layer, chat, turns: list[dict], asked: dict) -> Reply:
    message = cl.Message(content="")
    message.metadata = {"for": asked["id"]}  # which question it answers, to rebuild the prompt of a reopened chat
    chat.reply, chat.replying = message, True
    return Reply(layer, turns, asked, message, ReplySaver(message, layer), chat.prefs.show_stats)


async def _busy_notice(engine, layer) -> cl.Message | None:
    """Shown (never stored) while every slot of the engine is taken; removed once the reply starts."""
    if not engine.saturated():
        return None
    notice = cl.Message(content=BUSY_NOTICE, author="system")
    transient(notice, layer)
    await notice.send()
    return notice


async def reply_to(engine, layer, chat, turns: list[dict], asked: dict) -> None:
    """Answer the user's turn `asked` (its words and attachments, from `attachments.question`)."""
    keep_settings(layer)
    sessions.remember(layer)
    attachments.keep(layer, asked)
    request_id = uuid.uuid4().hex
    cl.user_session.set("request_id", request_id)
    prompt = [{key: t[key] for key in PROMPT_KEYS if key in t} for t in [*turns, asked]]
    reply, stats = _begin(layer, chat, turns, asked), None
    queued = await _busy_notice(engine, layer)
    try:
        async for item in engine.stream(prompt, chat.prefs.sampling, chat.prefs.system_prompt, request_id):
            if queued is not None:
                await queued.remove()
                queued = None
            if isinstance(item, Stats):
                stats = item
            else:
                await reply.add(item)
    except asyncio.CancelledError:  # Stop: keep what was written
        await reply.finish(None)
        raise
    except ChatError as error:
        if reply.written:  # the engine failed mid-reply: keep what was written
            await reply.finish(None)
        await cl.ErrorMessage(content=str(error), author="system").send()
        return
    finally:
        cl.user_session.set("request_id", None)
        chat.replying = False
        if queued is not None:
            await queued.remove()
    await reply.finish(stats)


async def stop(engine) -> None:
    """Stop this chat's reply: Chainlit cancels on_message itself, but not a rerun started by an edit, so the
    request is aborted in the engine too. Chainlit's own notice goes: the reply already ends in "*Stopped.*"."""
    request_id = cl.user_session.get("request_id")
    if request_id:
        await engine.abort(request_id)
    for shown in reversed(cl.chat_context.get()):
        if shown.content == CHAINLIT_STOP_NOTICE:
            await shown.remove()
            break
