"""A reply as the chat shows it: streamed in batches of tokens, saved while it streams, and finished with its
notes and cost line, also when it is stopped or the engine fails midway (what was written is kept).

The browser re-renders the whole message on each event, so tokens are sent at most every `FLUSH_EVERY_S`; the
first one at once. The reply's turn joins the chat's turns only when it is finished, as the model read it.

The latest reply carries the chat's tools as actions (ui/chat_tools.py): Regenerate, and Continue when it stopped
before its end (Stop, the length limit, the context, a failure). A continued reply goes on in the same message;
its metadata keeps what the whole reply cost ("stats") and how it ended ("finish"), also for a reopened chat, the
library's passages it named ("found"), and, after a Regenerate, the answers it replaced ("versions", ui/versions.py).
"""

import asyncio
import json
import time
import uuid
from dataclasses import asdict, dataclass, fields, replace

import chainlit as cl

from chainlit_door.patches import STOP_NOTICE
from engine.errors import ChatError
from engine.reports import Stats
from history.writes import ReplySaver, keep_settings, show_and_store, transient
from ui import attachments, branches, context_fill, edits, library, sessions, sidebar, text, versions
from engine.who import asking
from ui.words import error_text, say

FLUSH_EVERY_S = 0.04  # the browser re-renders the whole message per event: batch tokens
PROMPT_KEYS = ("role", "content", "attachments")  # what of a turn the engine is given (not its message id)
CONTINUE_ACTION, REGENERATE_ACTION = "continue_reply", "regenerate_reply"
CONTINUABLE = ("abort", "length")  # a reply that ended so can go on (a failure midway is "abort" too)


@dataclass
class Reply:
    """One reply being written: the question it answers, the message that shows it, what is not shown yet."""

    layer: object  # the history's data layer, or None
    asked: dict
    message: cl.Message
    saver: ReplySaver
    show_stats: bool
    pending: str = ""
    flushed_at: float = 0.0  # 0: the first token shows at once; later ones are batched
    before: Stats | None = None  # a continued reply: what its earlier part cost
    found: object = None  # what the library added to the question (ui/library.Found), shown as its sources
    shown_before: str | None = None  # a continued reply: how it was shown before Continue was pressed
    earlier: dict | None = None  # Continue, Regenerate: the reply's turn, put back with it when they are refused
    replaces: cl.Message | None = None  # Regenerate: the reply this one replaces once the engine takes the request
    started: bool = False  # whether the engine sent anything
    wrote: bool = False  # whether the engine sent any words (a Stop before them leaves a Continue or Regenerate undone)
    previous: cl.Message | None = None  # the chat's latest reply before this one, the latest again if this is refused
    chat: object = None  # the chat (ui/chat_state.py): the finished exchange joins its turns; it pages the versions
    versions: list[str] | None = None  # the answers to the question before this one, kept with it (ui/versions.py)

    @property
    def written(self) -> str:
        return self.message.content + self.pending

    async def begun(self) -> None:
        """The engine took the request: an edited question now takes its old text's place and the turns after it go
        (ui/edits.py)."""
        self.started = True
        await edits.take(self.chat, self.layer)

    async def _replace(self) -> None:
        """The reply's first words: a regenerated reply now takes its predecessor's place, in the chat and in the
        history (a Stop before them leaves the predecessor as it was)."""
        if self.replaces is not None:
            replaced, self.replaces = self.replaces, None
            if self.versions:  # kept with the new reply from now on: a server that stops mid-reply loses none
                self.message.metadata["versions"] = [*self.versions, ""]
            await replaced.remove()

    async def add(self, delta: str) -> None:
        if delta and not self.wrote:
            self.wrote = True
            await self._replace()
        self.pending += delta
        if time.monotonic() - self.flushed_at >= FLUSH_EVERY_S:
            await self.message.stream_token(self.pending)
            self.pending, self.flushed_at = "", time.monotonic()
            self.saver.shown()

    async def finish(self, stats: Stats | None) -> None:
        """Record the turn in the chat's turns and show (and save) the reply with its notes and cost;
        `stats` None: it was stopped or cut by a failure."""
        await self.begun()
        await self._replace()
        answer = self.written
        sent = attachments.as_sent(self.asked, stats)
        if sent is not self.asked:
            attachments.keep(self.layer, sent)
        self.chat.add_exchange(sent, {"role": "assistant", "content": answer})
        stats = joined(self.before, stats)
        if stats is not None:
            self.chat.context_used = context_fill.used(stats)
        finish = "abort" if stats is None else stats.finish_reason
        self.message.metadata = {**self.message.metadata, "answer": answer, "finish": finish,
                                 "stats": None if stats is None else {**asdict(stats), "cut": []}}
        await self.saver.settle()  # a write of the streaming reply must not land over the finished one
        stopped = finish == "abort"
        extra = [say("reply.stopped")] if stats is None else text.notes(stats, stopped)
        if self.found is not None:
            self.message.metadata["found"] = self.found.record()
            extra.append(self.found.sources_line())
            self.message.elements = library.source_elements(self.found)
        if stats is not None and self.show_stats:
            extra.append(text.stats_line(stats))
        shown = "\n\n".join([text.close_code_fence(answer), *extra]) if answer else "\n\n".join(extra)
        self.message.content = versions.kept(self.message, self.versions or [], shown)
        self.message.actions = [*tools(finish), *versions.buttons(self.message)]
        versions.remember(self.chat, self.message)
        await show_and_store(self.message, self.layer)
        await branches.offer(self.message)  # the reply to an edited question pages its branches

    async def put_back(self) -> cl.Message:
        """A Continue or Regenerate refused before the engine sent anything (the question no longer fits, the
        engine failed): the reply, its turn and its tools as they were (a continued reply does not claim to have
        been stopped; a regenerated one was never removed). Returns the reply, the chat's latest again."""
        self.chat.add_exchange(self.asked, self.earlier)
        if self.replaces is not None:  # Regenerate: the new reply was never shown
            shown = self.replaces
            shown.actions = [*tools(shown.metadata.get("finish")),
                             *versions.buttons(shown, versions.shown_at(self.chat, shown))]
            for action in shown.actions:
                await action.send(for_id=shown.id)
            return shown
        self.message.content = self.shown_before
        self.message.actions = [*tools(self.message.metadata.get("finish")), *versions.buttons(self.message)]
        versions.remember(self.chat, self.message)
        await show_and_store(self.message, self.layer)
        return self.message

    async def keep_previous(self) -> cl.Message | None:
        """A new question refused before the engine sent anything: the chat's latest reply keeps its tools (and the
        turns an edit would have replaced come back: ui/edits.py). Returns it, the chat's latest again."""
        await edits.put_back(self.chat)
        shown = self.previous
        if shown is not None:
            shown.actions = [*tools(shown.metadata.get("finish")),
                             *versions.buttons(shown, versions.shown_at(self.chat, shown))]
            for action in shown.actions:
                await action.send(for_id=shown.id)
        return shown


def tools(finish: str | None) -> list[cl.Action]:
    """The actions under the latest reply: Continue when it stopped before its end, and Regenerate."""
    names = [CONTINUE_ACTION] if finish in CONTINUABLE else []
    return [cl.Action(name=name, payload={}, label=text.label(name), tooltip=text.label(name, tooltip=True),
                      icon=text.ACTION_ICONS[name]) for name in [*names, REGENERATE_ACTION]]


def joined(before: Stats | None, after: Stats | None) -> Stats | None:
    """The cost of a whole reply from its earlier part's and its continuation's (the prompt is the first one's;
    cached tokens are the continuation's, the prefix cache's share of going on)."""
    if before is None or after is None:
        return after
    decode_s = sum((s.generated_tokens - 1) / s.decode_tokens_per_s for s in (before, after)
                   if s.decode_tokens_per_s and s.generated_tokens > 1)
    generated = before.generated_tokens + after.generated_tokens
    return replace(after, ttft_s=before.ttft_s, prompt_tokens=before.prompt_tokens, generated_tokens=generated,
                   total_s=before.total_s + after.total_s, decode_tokens_per_s=(generated - 2) / decode_s
                   if decode_s > 0 and generated > 2 else after.decode_tokens_per_s)


def stored_stats(message: cl.Message) -> Stats | None:
    """What a finished reply cost, from its metadata (None when it was stopped before its cost was known)."""
    record = (message.metadata or {}).get("stats")
    if not isinstance(record, dict):
        return None
    try:
        return Stats(**{f.name: record[f.name] for f in fields(Stats) if f.name in record and f.name != "cut"})
    except TypeError:  # a record of another version
        return None


async def _begin(layer, chat, asked: dict, going_on: cl.Message | None, found=None,
                 earlier: dict | None = None, replaces: cl.Message | None = None) -> Reply:
    """The reply's message: a new one, or `going_on`, the reply to continue, shown again as its text alone."""
    if chat.reply is not None:  # the tools are for the latest reply only; its earlier answers stay a press away
        await chat.reply.remove_actions()
        chat.reply.actions = []
        if going_on is None:
            await versions.offer(chat, chat.reply)
    if going_on is None:
        message = cl.Message(content="")
        message.metadata = {"for": asked["id"]}  # which question it answers, to rebuild a reopened chat's prompt
        shown_before = None
    else:
        shown_before = going_on.content
        message, going_on.content = going_on, going_on.metadata["answer"]
    previous, chat.reply = chat.reply, message
    before = None if going_on is None else stored_stats(going_on)
    kept = versions.earlier(replaces) if replaces is not None else versions.texts(message)[:-1]
    return Reply(layer, asked, message, ReplySaver(message, layer), chat.prefs.show_stats, before=before,
                 found=found, shown_before=shown_before, earlier=earlier, replaces=replaces, chat=chat, versions=kept,
                 previous=previous)


async def _busy_notice(engine, layer) -> cl.Message | None:
    """Shown (never stored) while every slot of the engine, or this user's share of them, is taken; removed once the
    reply starts."""
    if not engine.saturated(asking().name):
        return None
    notice = cl.Message(content=say("reply.busy"), author="system")
    transient(notice, layer)
    await notice.send()
    return notice


async def reply_to(engine, layer, chat, turns: list[dict], asked: dict, going_on: cl.Message | None = None,
                   found=None, earlier: dict | None = None, replaces: cl.Message | None = None) -> None:
    """Answer the user's turn `asked` (its words and attachments, from `attachments.question`); `going_on`: the
    reply to `asked` to continue, in its own message, from its stored answer; `found`: what the library added to
    the question (ui/library.py), named under the reply; `earlier`: the reply's turn that a Continue or a
    Regenerate (of `replaces`) took out of `turns`, put back if the engine refuses the request."""
    keep_settings(layer, sidebar.values(chat.prefs))
    sessions.remember(layer)
    attachments.keep(layer, asked)
    request_id = chat.request_id = uuid.uuid4().hex
    prompt = [{key: t[key] for key in PROMPT_KEYS if key in t} for t in [*turns, asked]]
    if going_on is not None:
        prompt.append({"role": "assistant", "content": going_on.metadata["answer"]})
    reply, stats = await _begin(layer, chat, asked, going_on, found, earlier, replaces), None
    queued = await _busy_notice(engine, layer)
    try:
        async for item in engine.stream(prompt, chat.prefs.sampling, chat.prefs.system_prompt, request_id,
                                        continue_reply=going_on is not None, user=asking().name):
            if queued is not None:
                await queued.remove()
                queued = None
            if not reply.started:
                await reply.begun()
            if isinstance(item, Stats):
                stats = item
            else:
                await reply.add(item)
    except asyncio.CancelledError:  # Stop: keep what was written, and tell what it cost where the engine knows
        if reply.earlier is not None and not reply.wrote:  # a Continue or Regenerate stopped before a word: undone
            chat.reply = await reply.put_back()
        else:
            await reply.finish(engine.stopped_stats(request_id))
        raise
    except ChatError as error:
        said = error_text(error)
        if reply.earlier is not None and not reply.wrote:
            chat.reply = await reply.put_back()
            if replaces is not None:  # the engine's words are about a new message: say what was (not) done
                said = say("tools.not_regenerated", why=said[:1].lower() + said[1:])
        elif not reply.wrote:  # a new or edited question refused: the chat stays as it was
            chat.reply = await reply.keep_previous()
        elif reply.written:  # the engine failed mid-reply: keep what was written
            await reply.finish(None)
        await cl.ErrorMessage(content=said, author="system").send()
        return
    finally:
        chat.request_id = None
        if queued is not None:
            await queued.remove()
    if reply.earlier is not None and not reply.wrote and (stats is None or stats.finish_reason == "abort"):
        chat.reply = await reply.put_back()  # a Continue or Regenerate stopped before its first word: undone
        return
    await reply.finish(stats)


async def stop(engine, chat) -> None:
    """Stop `chat`'s reply (None: a chat not made yet): Chainlit cancels on_message itself, but not a rerun started
    by an edit, so the request is aborted in the engine too. Chainlit's own notice goes: the reply already ends in
    "*Stopped.*"."""
    if chat is not None and chat.request_id:
        await engine.abort(chat.request_id)
    for shown in reversed(cl.chat_context.get()):
        if shown.content == STOP_NOTICE:
            await shown.remove()
            break


def stored(thread: dict, turns: list[dict]) -> cl.Message | None:
    """A reopened chat's latest reply as a message to continue or replace: the stored reply to its last turns."""
    if len(turns) < 2 or turns[-1]["role"] != "assistant":
        return None
    for step in reversed(thread.get("steps") or []):
        meta = step.get("metadata") or {}
        meta = json.loads(meta) if isinstance(meta, str) else meta
        if step.get("type") == "assistant_message" and isinstance(meta, dict) and meta.get("for") == turns[-2]["id"]:
            return cl.Message(content=step.get("output") or "", id=step["id"], metadata=meta,
                              created_at=step.get("createdAt"))
    return None


async def offer_tools(message: cl.Message) -> None:
    """Show the tools under a reopened chat's latest reply (Chainlit keeps no actions in the history)."""
    meta = message.metadata or {}
    message.actions = tools(meta.get("finish") or ("abort" if meta.get("cut_off") else "stop"))
    for action in message.actions:
        await action.send(for_id=message.id)
