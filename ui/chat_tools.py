"""Regenerate and Continue: the actions under a chat's latest reply (ui/reply.py attaches them).

Regenerate asks the same question again at the chat's sampling settings and puts the new answer in place of the old
one: in the chat, in its turns and in the history (the old reply is deleted there too, so a reopened chat shows, and
its prompt holds, exactly what the chat showed); the old answers stay with the new reply as its versions
(ui/versions.py), and the library's sources it named are named again. The old reply goes only once the engine has
taken the new request: a refused one (the question no longer fits the context, the engine failed) leaves the reply,
its turn, its buttons and its history as they were, as a refused Continue does (reply.Reply.put_back). Continue goes
on writing a reply that stopped before its end, in the same message: the prompt is the same turns plus what was
written, rendered as the chat template's continuation of it (engine.chat), so the prefix cache serves most of it.
Continue under a reply paged back to an earlier answer ("1 / 2") is refused, saying how to show the newest: it goes on
from the newest answer, which the history and the prompt hold, and text must not be appended to an answer unseen.
Both run inside Chainlit's action request, not a task Chainlit can cancel: the chat is told a task runs (its Stop
button shows) and Stop aborts the request in the engine, leaving a reply that can be continued again.
"""

import chainlit as cl

from engine.backend import CHANGING
from ui import chat_state, start_note, versions
from ui.library import Found
from ui.reply import reply_to
from ui.words import say
from chainlit_door import sessions as door

BUSY, SWITCHING, NOT_LATEST = "tools.busy", "tools.switching", "tools.not_latest"  # why not, as ui/words/ says it
EARLIER_VERSION = "tools.earlier_version"


def _refusal(engine, chat, action: cl.Action) -> str | None:
    """Why this action cannot run now (the key of its words), or None."""
    if chat.replying:
        return BUSY
    if engine.state in CHANGING:
        return SWITCHING
    latest = chat.reply
    if latest is None or action.forId != latest.id or len(chat.turns) < 2 or chat.turns[-1]["role"] != "assistant":
        return NOT_LATEST
    return None


async def _ready(engine, chat, action: cl.Action) -> bool:
    """Whether the action may run; the chat is told why not."""
    why = _refusal(engine, chat, action)
    if why is None and not await start_note.ensure_engine(engine, chat):  # asleep or failed: the start's note says
        return False
    if why is not None:
        await cl.ErrorMessage(content=say(why), author="system").send()
    return why is None


async def _answer(engine, layer, chat, going_on: cl.Message | None, replaces: cl.Message | None = None) -> None:
    """Answer the chat's last question again (`going_on`: by continuing that reply; `replaces`: the reply a new one
    takes the place of), as a task the chat can stop. The question keeps the library's passages it was asked
    with, so the answer names the same sources as the reply it continues or replaces."""
    asked, earlier = chat.take_last_exchange()  # back when the reply is finished, or as they were if refused
    found = Found.stored((going_on or replaces).metadata)
    await door.emitter().task_start()
    try:
        await reply_to(engine, layer, chat, chat.turns, asked, going_on, found=found, earlier=earlier,
                       replaces=replaces)
    finally:
        await door.emitter().task_end()


def _earlier_shown(chat, action: cl.Action) -> tuple[int, int] | None:
    """(shown, count) when the latest reply pages back to an earlier answer: Continue goes on from the newest one (the
    stored reply, the prompt's), which the page does not show, so it is refused rather than appended to text unseen."""
    latest = chat.reply
    if latest is None or action.forId != latest.id or len(versions.texts(latest)) < 2:
        return None
    at, count = versions.shown_at(chat, latest), len(versions.texts(latest))
    return (at + 1, count) if at < count - 1 else None


async def continue_reply(engine, layer, action: cl.Action) -> None:
    chat = await chat_state.current(engine)
    if (earlier := _earlier_shown(chat, action)) is not None:
        at, count = earlier
        await cl.ErrorMessage(content=say(EARLIER_VERSION, at=at, of=count), author="system").send()
        return
    if await _ready(engine, chat, action):
        await _answer(engine, layer, chat, chat.reply)


async def regenerate(engine, layer, action: cl.Action) -> None:
    chat = await chat_state.current(engine)
    if await _ready(engine, chat, action):
        old, chat.reply = chat.reply, None
        await old.remove_actions()
        # removed (from the chat and the history) once the engine takes the new request: a refusal keeps it
        await _answer(engine, layer, chat, None, replaces=old)
