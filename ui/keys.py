"""A user's own API keys in the chat: the Keys chip lists them, with a New key button and a Revoke button for each;
`new NAME` typed beside the chip makes a named one, `revoke N` (or the name) revokes one. The keys themselves are
the history's (history/keys.py): kept as hashes, checked by the API (api/callers.py) in every app process.

A new key is shown once, in a message that is never stored (`transient`): the history's tables never hold a key in
clear, and a reopened chat does not show it again. The list (and "You have no API keys") is shown, never stored
either: it is out of date once a key is made or revoked, and the chip lists the keys as they are at any time.
Everything here acts on the signed-in user's keys only (the local
user's on loopback): every statement names the user.
"""

import chainlit as cl

from history import keys
from history.writes import transient
from ui.text import TABLE
from engine.who import asking
from ui.words import in_every_language, language, say

NEW, REVOKE = in_every_language("keys.new_word"), in_every_language("keys.revoke_word")  # typed beside the chip
NEW_ACTION, REVOKE_ACTION = "key_new", "key_revoke"  # the list's buttons (their callbacks are below)



def _cell(text: str) -> str:
    """Text as one cell of a Markdown table: a "|" would end the cell, a backtick open code."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("`", "'")


def after(words: str, starts: tuple[str, ...]) -> str | None:
    """The rest of `words` when they begin with one of `starts` (as a word), else None. A Chinese command needs no
    space after it ("撤销1", "新建笔记本"), and any space counts (the ideographic one too)."""
    for start in starts:
        if words.lower().startswith(start):
            rest = words[len(start):]
            if not rest or rest[0].isspace() or not start.isascii():
                return rest.strip()
    return None


async def on_command(engine, layer, message: cl.Message) -> None:
    """The Keys chip (or `/keys`): make, revoke, or list the user's keys."""
    if layer is None:
        return await cl.ErrorMessage(content=say("keys.no_history"), author="system").send()
    if not (engine.serves_api and engine.settings.api):
        return await cl.ErrorMessage(content=say("keys.no_api"), author="system").send()
    words = message.content.strip()  # what was typed beside the chip (`/keys` is the chip: ui/chips.py)
    if (name := after(words, NEW)) is not None:
        await _make(layer, name)
    elif (which := after(words, REVOKE)) is not None:
        await _revoke(layer, which)
    else:
        await _list(layer)


async def _make(layer, name: str) -> None:
    try:
        key = await keys.make(layer, asking().name, name)
    except keys.KeyRefused as why:
        return await cl.ErrorMessage(content=say("keys.not_made", why=why.in_language(language())),
                                     author="system").send()
    except Exception as error:  # the database's own error: no key was kept, so none is shown
        return await cl.ErrorMessage(content=say("keys.db_failed", error=type(error).__name__),
                                     author="system").send()
    shown = cl.Message(content=say("keys.made", name=_cell(keys.checked_name(name)), new_key=key),
                       author="system")
    transient(shown, layer)  # shown once, never stored: the history keeps only the key's hash
    await shown.send()


async def _revoke(layer, which: str) -> None:
    user = asking().name
    listed = await keys.listed(layer, user)
    chosen = [k for n, k in enumerate(listed, 1) if which == str(n) or k.name.lower() == which.lower()]
    if not which or not chosen:
        return await cl.ErrorMessage(content=say("keys.no_such", which=which), author="system").send()
    await keys.revoke(layer, user, chosen[0].id)
    await cl.Message(content=say("keys.revoked", name=_cell(chosen[0].name)), author="system").send()


async def _list(layer) -> None:
    listed = await keys.listed(layer, asking().name)
    how = say("keys.how")
    make = cl.Action(name=NEW_ACTION, payload={}, icon="key-round", label=say("keys.new_button"),
                     tooltip=say("keys.new_tip"))
    if not listed:
        notice = cl.Message(content=say("keys.none", how=how), author="system", actions=[make])
        transient(notice, layer)  # out of date at the first key made: a reopened chat must not say there are none
        return await notice.send()
    rows = [f"| {n} | {_cell(k.name)} | {k.created_at} | {k.last_used_at or say('keys.never')} |"
            for n, k in enumerate(listed, 1)]
    table = "\n".join([say("keys.head"), "|---|---|---|---|", *rows])
    buttons = [cl.Action(name=REVOKE_ACTION, payload={"id": k.id}, icon="ban",
                         label=say("keys.revoke_button", n=n, name=k.name[:24]),
                         tooltip=say("keys.revoke_tip", name=k.name)) for n, k in enumerate(listed, 1)]
    shown = cl.Message(content=say("keys.list", count=len(listed), table=table, how=how), author="system",
                       type=TABLE, actions=[make, *buttons])
    transient(shown, layer)  # the keys as they are now: the Keys chip lists them again at any time
    await shown.send()


def _free_name(taken: set[str]) -> str:
    """A name for a key made by its button: "key 1", "key 2" ... the first not taken."""
    return next(name for n in range(1, len(taken) + 2) if (name := say("keys.default_name", n=n)) not in taken)


@cl.action_callback(NEW_ACTION)
async def new_pressed(action: cl.Action) -> None:
    """The list's New key button: a key named "key N", shown once (a typed `new NAME` names it)."""
    from chainlit_door.server import data_layer

    layer = data_layer()
    if layer is None:
        return await cl.ErrorMessage(content=say("keys.no_history"), author="system").send()
    await _make(layer, _free_name({k.name for k in await keys.listed(layer, asking().name)}))


@cl.action_callback(REVOKE_ACTION)
async def revoke_pressed(action: cl.Action) -> None:
    """A listed key's Revoke button: the key goes (if it is still this user's), and its button with it."""
    from chainlit_door.server import data_layer

    layer, key_id = data_layer(), (action.payload or {}).get("id")
    mine = {k.id: k for k in await keys.listed(layer, asking().name)} if layer is not None else {}
    if not isinstance(key_id, str) or key_id not in mine:
        await cl.ErrorMessage(content=say("keys.already_gone"), author="system").send()
    else:
        await keys.revoke(layer, asking().name, key_id)
        await cl.Message(content=say("keys.revoked", name=_cell(mine[key_id].name)), author="system").send()
    await action.remove()
