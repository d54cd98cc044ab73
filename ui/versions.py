"""A reply's versions: a Regenerate keeps the answers it replaced with the new one, each a press of "◀ previous"
or "next ▶" away, under the reply that says which it shows ("2 / 2").

The reply's metadata keeps every version as it was shown (`versions`, oldest first, the reply's own last), so the
history holds them with the reply and a reopened chat offers them again (Chainlit keeps no actions). Paging
changes only what the page shows: the stored reply and the prompt of the chat's next question stay the newest
answer, the one the last Regenerate gave, so the chat, a reopened chat and an export agree on what the model read.
"""

import json

import chainlit as cl

from ui.words import say
from chainlit_door import sessions as door

PREVIOUS, NEXT = "reply_version_previous", "reply_version_next"


def texts(message: cl.Message) -> list[str]:
    versions = (message.metadata or {}).get("versions")
    return versions if isinstance(versions, list) and all(isinstance(v, str) for v in versions) else []


def earlier(replaced: cl.Message) -> list[str]:
    """The versions a new answer keeps of the reply it replaces: that reply's own, or the reply as shown."""
    return texts(replaced) or [replaced.content]


def kept(message: cl.Message, before: list[str], shown: str) -> str:
    """Keep `shown`, the reply's newest text, after the versions `before` it in its metadata; what it shows."""
    if not before:
        message.metadata.pop("versions", None)
        return shown
    message.metadata["versions"] = [*before, shown]
    return counted(message.metadata["versions"], len(before))


def counted(versions: list[str], at: int) -> str:
    return f"{versions[at]}\n\n{say('versions.counter', at=at + 1, of=len(versions))}"


def shown_at(chat, message: cl.Message) -> int:
    """Which version of `message` the chat shows (the newest unless paged)."""
    return chat.versions.get(message.id, len(texts(message)) - 1)


def buttons(message: cl.Message, at: int | None = None) -> list[cl.Action]:
    """The paging buttons of a reply with versions, showing version `at` (None: the newest). Their ids are the
    reply's, so the buttons of any earlier page are the ones removed."""
    count = len(texts(message))
    at = count - 1 if at is None else at
    if count < 2:
        return []
    pages = [(PREVIOUS, at - 1)] if at > 0 else []
    pages += [(NEXT, at + 1)] if at < count - 1 else []
    return [cl.Action(name=name, id=f"{message.id}:{name}", forId=message.id, payload={"to": to},
                      label=say(name), tooltip=say(f"{name}.tip", at=to + 1, of=count))
            for name, to in pages]


def remember(chat, message: cl.Message) -> None:
    """A reply whose versions the chat can page through (a finished one, or a reopened chat's)."""
    if texts(message):
        chat.replies[message.id] = message
        chat.versions.pop(message.id, None)


def stored(thread: dict) -> list[cl.Message]:
    """A reopened chat's replies that keep earlier versions."""
    kept = []
    for step in thread.get("steps") or []:
        meta = step.get("metadata") or {}
        meta = json.loads(meta) if isinstance(meta, str) else meta
        if step.get("type") == "assistant_message" and isinstance(meta, dict) and meta.get("versions"):
            kept.append(cl.Message(content=step.get("output") or "", id=step["id"], metadata=meta,
                                   created_at=step.get("createdAt")))
    return kept


async def offer(chat, message: cl.Message) -> None:
    """Send the paging buttons of a reply, at the version the chat shows (its other buttons went)."""
    if texts(message):
        chat.replies[message.id] = message
        await _send(message, chat.versions.get(message.id))


async def _send(message: cl.Message, at: int | None) -> None:
    """The reply's paging buttons for version `at`, also among its actions, which go when it stops being the
    latest reply or is regenerated."""
    pages = buttons(message, at)
    message.actions = [a for a in message.actions if a.name not in (PREVIOUS, NEXT)] + pages
    for button in pages:
        await button.send(for_id=message.id)


async def page(chat, action: cl.Action) -> None:
    """Show another version of a reply: the page changes, not the stored reply nor the prompt."""
    message = None if chat is None else chat.replies.get(action.forId)
    versions = texts(message) if message is not None else []
    to = (action.payload or {}).get("to")
    if not isinstance(to, int) or not 0 <= to < len(versions):
        await cl.ErrorMessage(content=say("versions.gone"), author="system").send()
        return
    for button in buttons(message, shown_at(chat, message)):
        await button.remove()
    chat.versions[message.id] = to
    step = message.to_dict()
    step["output"] = counted(versions, to)
    await door.emitter().update_step(step)
    await _send(message, to)
