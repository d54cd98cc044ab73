"""An edited question's branches: an edit keeps the question as it was and every turn after it, and the reply to the
question offers "◀ Question 2 / 2" to show them again (the other branch's turns in place of the ones shown).

A branch is the question's text and the chat's messages after it (questions and replies, each as its step: id,
type, author, text, metadata, time), kept in the question's metadata (`branches`, oldest first, and `branch`, the
one shown), so the history holds every branch with the question, as ui/versions.py keeps a reply's versions with
the reply. The branch shown is the one place that is not copied there: its messages are the chat's own steps, so
a reopened chat, its prompt (history/turns.py) and its export are the branch shown, with nothing to rebuild but
the buttons. Switching writes the branch leaving into the question's metadata first, then takes its messages off
the page and out of the history and sends the other branch's again under their own ids, and the chat's turns
become that branch's (ChatState.show_branch). A later question's own branches travel inside its step's metadata.
"""

import json

import chainlit as cl

from chainlit_door import sessions as door
from chainlit_door.server import data_layer
from history.turns import turns_from
from history.writes import show_and_store, transient
from ui import attachments, context_fill, library, versions
from ui.words import say

BRANCHES, SHOWN = "branches", "branch"  # the question's metadata: every branch, and which one is shown
PREVIOUS, NEXT = "question_branch_previous", "question_branch_next"


def parsed(meta) -> dict:
    """Metadata as a dict (a reopened chat's steps carry it as the database's JSON text)."""
    meta = json.loads(meta or "{}") if isinstance(meta, str) else meta
    return dict(meta) if isinstance(meta, dict) else {}


def meta_of(message: cl.Message) -> dict:
    return parsed(message.metadata)


def record(message: cl.Message) -> dict:
    """A shown message as a branch keeps it."""
    return {"id": message.id, "type": message.type, "name": message.author, "output": message.content or "",
            "metadata": meta_of(message), "createdAt": message.created_at}


def conversation(messages: list[cl.Message]) -> list[dict]:
    """The questions and replies among `messages` (notices and errors are the moment's, not the chat's)."""
    return [record(m) for m in messages
            if m.type == "user_message" or (m.type == "assistant_message" and "for" in meta_of(m))]


def position(meta: dict) -> tuple[int, int] | None:
    """(the branch shown, how many) of a question's metadata, or None when it has no branches."""
    branches, at = meta.get(BRANCHES), meta.get(SHOWN)
    if not isinstance(branches, list) or len(branches) < 2 or not isinstance(at, int) or not 0 <= at < len(branches):
        return None
    return at, len(branches)


def edited(meta: dict, text_before: str, later: list[dict]) -> dict:
    """The question's metadata after an edit: the branch shown so far kept (its text before the edit, the messages
    after it), and a new one, shown."""
    where = position(meta)
    branches, at = (list(meta[BRANCHES]), where[0]) if where else ([None], 0)
    branches[at] = {"question": text_before, "later": later}
    return {**meta, BRANCHES: [*branches, None], SHOWN: len(branches)}


def switched(meta: dict, to: int, text_shown: str, later_shown: list[dict]) -> tuple[dict, dict]:
    """The question's metadata with branch `to` shown, and that branch; the one leaving is kept as it is now."""
    branches, at = list(meta[BRANCHES]), meta[SHOWN]
    target = branches[to]
    branches[at], branches[to] = {"question": text_shown, "later": later_shown}, None
    return {**meta, BRANCHES: branches, SHOWN: to}, target


def buttons(reply_id: str, question_id: str, meta: dict) -> list[cl.Action]:
    """The branch buttons under the reply to an edited question; their ids are the reply's, so any earlier pair is
    the one removed."""
    where = position(meta)
    if where is None:
        return []
    at, count = where
    pages = [(PREVIOUS, at - 1)] if at > 0 else []
    pages += [(NEXT, at + 1)] if at < count - 1 else []
    return [cl.Action(name=name, id=f"{reply_id}:{name}", forId=reply_id, payload={"question": question_id, "to": to},
                      label=say(name, at=at + 1, of=count), tooltip=say(f"{name}.tip", to=to + 1, of=count))
            for name, to in pages]


async def take_off_buttons(message_id: str) -> None:
    """Remove the paging buttons (of versions and of branches) a message may carry: the browser keeps a removed
    message's buttons, and would show them twice when the message comes back."""
    for name in (versions.PREVIOUS, versions.NEXT, PREVIOUS, NEXT):
        await cl.Action(name=name, id=f"{message_id}:{name}", payload={}).remove()


async def offer(message: cl.Message) -> None:
    """Send the branch buttons of a reply whose question (shown in this chat) has branches."""
    question_id = meta_of(message).get("for")
    question = next((m for m in door.shown_messages() if m.id == question_id), None)
    if question is not None and position(meta_of(question)):
        await _send(message.id, question.id, meta_of(question))


async def _send(reply_id: str, question_id: str, meta: dict) -> None:
    for name in (PREVIOUS, NEXT):
        await cl.Action(name=name, id=f"{reply_id}:{name}", payload={}).remove()
    for button in buttons(reply_id, question_id, meta):
        await button.send(for_id=reply_id)


async def offer_stored(thread: dict) -> None:
    """A reopened chat's branch buttons (the history keeps the branches, not their buttons). An edited question
    whose reply was never stored (the server was killed in its first second) gets them under a notice, shown and
    never stored, so its other branches stay in reach."""
    steps = thread.get("steps") or []
    for step in steps:
        meta = parsed(step.get("metadata"))
        if step.get("type") != "user_message" or not position(meta):
            continue
        reply = next((s for s in steps if s.get("type") == "assistant_message"
                      and parsed(s.get("metadata")).get("for") == step["id"]), None)
        if reply is None:
            reply = cl.Message(content=say("branches.kept"), author="system")
            transient(reply, data_layer())
            await reply.send()
            reply = {"id": reply.id}
        await _send(reply["id"], step["id"], meta)


async def keep(question: cl.Message, text_before: str, later: list[cl.Message]) -> None:
    """An edit the engine took: the question's metadata keeps the branch it replaces (when that branch had turns),
    and the buttons of the messages leaving the page go with them."""
    kept = conversation(later)
    if kept:
        question.metadata = edited(meta_of(question), text_before, kept)
    for message in later:
        await take_off_buttons(message.id)


async def switch(chat, layer, action: cl.Action, offer_tools, stored_stats) -> None:
    """Show another branch of an edited question: in the page, the history, the chat's turns and the context it
    takes. `offer_tools` sends the chat's tools under its latest reply, `stored_stats` reads what a stored reply
    cost (ui/reply.py's, handed in: ui/reply.py reaches this module through ui/edits.py)."""
    payload = action.payload or {}
    shown = door.shown_messages()
    index = next((i for i, m in enumerate(shown) if m.id == payload.get("question")), None)
    where = None if index is None else position(meta_of(shown[index]))
    to = payload.get("to")
    if chat is not None and chat.replying:
        await cl.ErrorMessage(content=say("tools.busy"), author="system").send()
        return
    if chat is None or where is None or not isinstance(to, int) or not 0 <= to < where[1] or to == where[0] \
            or not isinstance(meta_of(shown[index])[BRANCHES][to], dict):
        await cl.ErrorMessage(content=say("branches.gone"), author="system").send()
        return
    question, later = shown[index], shown[index + 1:]
    meta, target = switched(meta_of(question), to, question.content, conversation(later))
    question.metadata, question.content = meta, target["question"]
    await show_and_store(question, layer)  # every branch kept before any message leaves
    if chat.reply is not None:
        await chat.reply.remove_actions()
    holder = [m for m in shown[:index] if m.id == action.forId]  # a reopened chat's notice that held the buttons
    for message in [*holder, *later]:
        await take_off_buttons(message.id)
        chat.replies.pop(message.id, None)
        await message.remove()
    sent = [await _resend(step) for step in target["later"]]
    attached = await attachments.stored(door.session().thread_id) if layer is not None else {}
    asked = {"id": question.id, "type": "user_message", "output": question.content,
             "metadata": {k: v for k, v in meta.items() if k not in (BRANCHES, SHOWN)}}
    chat.show_branch({question.id, *(m.id for m in later)}, turns_from({"steps": [asked, *target["later"]]}, attached))
    await _offer_buttons(chat, sent, offer_tools)
    chat.context_used = context_fill.used(stored_stats(chat.reply)) if chat.reply is not None else 0


async def _resend(step: dict) -> cl.Message:
    """A kept message shown (and stored) again under its own id and time; a reply with the library's sources
    shows them again (its elements went with it)."""
    meta = parsed(step.get("metadata"))
    found = library.Found.stored(meta)
    message = cl.Message(content=step.get("output") or "", id=step["id"], author=step.get("name"),
                         type=step.get("type") or "assistant_message", metadata=meta,
                         created_at=step.get("createdAt"),
                         elements=library.source_elements(found) if found is not None else None)
    await message.send()
    return message


async def _offer_buttons(chat, sent: list[cl.Message], offer_tools) -> None:
    """The buttons of the branch's messages: versions, their own questions' branches, the tools under the latest."""
    replies = [m for m in sent if m.type == "assistant_message" and "answer" in meta_of(m)]
    chat.reply = replies[-1] if replies and sent[-1] is replies[-1] else None
    if chat.reply is not None:
        await offer_tools(chat.reply)
    for message in replies:
        versions.remember(chat, message)
        await versions.offer(chat, message)
        await offer(message)
