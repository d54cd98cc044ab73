"""A chat's export and import, as the commands beside the message box ("Export", "Import").

Export sends the chat as two files named after it (its name in the history, a rename included) under one notice
(shown, never stored): Markdown to read, with the model, preset and sampling at the top, and JSON in the OpenAI
messages format (history/exchange.py writes both). Import
takes such a JSON file (or the app's own export), attached to the Import chip or picked in the upload box the chip
opens when nothing is attached (ui/file_ask.py), and stores it as a new chat in the
history of the user who imports it, never anyone else's (the thread is made with the signed-in user as its
owner; Chainlit's own checks then keep it theirs); opened from the sidebar it goes on with its turns in the prompt
(history/turns.py reads the stored steps as any chat's). It needs the history: without it nothing is kept.
Export all (the button under Export's answer) sends every chat of the signed-in user, and no one else's, as one zip
of those same two files per chat, read from the history (each thread's steps and sidebar, as a reopened chat's).
"""

import asyncio
import json
import os
import re
import uuid
from datetime import datetime, timedelta, timezone

import chainlit as cl
from chainlit_door.server import config

from engine.settings import CHAT_SAMPLING
from chainlit_door.sessions import write_now
from history import exchange
from history.writes import transient
from history.turns import turns_from
from ui import attachments, chat_state, file_ask, sidebar, text
from ui.words import say, say_known
from chainlit_door import sessions as door



def _title(turns: list[dict]) -> str:
    first = next((t["content"] for t in turns if t["role"] == "user"), "") or "Chat"
    return " ".join(first.split())[:60]


async def _name(layer) -> str | None:
    """The chat's name as the history lists it now (a rename included), or None (no history, or not kept yet)."""
    if layer is None or not door.session().has_first_interaction:
        return None
    rows = await layer.execute_sql(query='SELECT "name" FROM threads WHERE "id" = :id',
                                   parameters={"id": door.session().thread_id})
    name = rows[0].get("name") if isinstance(rows, list) and rows else None
    return " ".join(name.split())[:60] if isinstance(name, str) and name.strip() else None


async def export(engine, layer) -> None:
    chat = await chat_state.current(engine)
    if not chat.turns:  # a chat with nothing in it yet still offers the user's other chats
        if layer is None:
            return await cl.ErrorMessage(content=say("export.nothing"), author="system").send()
        notice = cl.Message(content=say("export.nothing"), author="system", actions=_all_button(layer))
        transient(notice, layer)
        return await notice.send()
    prefs, title = chat.prefs, await _name(layer) or _title(chat.turns)
    sampling = prefs.sampling.model_dump(include={*CHAT_SAMPLING, "seed"})
    args = (chat.turns, engine.settings.model, engine.preset_name, sampling, prefs.system_prompt, title)
    stem = _stem(title)
    files = [cl.File(name=f"{stem}.md", content=exchange.as_markdown(*args, door.language()).encode(),
                     mime="text/markdown",
                     display="inline"),
             cl.File(name=f"{stem}.json", content=exchange.as_json(*args).encode(), mime="application/json",
                     display="inline")]
    notice = cl.Message(content=say("export.done", count=len(chat.turns)), author="system",
                        elements=files, actions=_all_button(layer))
    transient(notice, layer)  # the files are made again at any time; the history keeps the turns
    await notice.send()


def _stem(title: str) -> str:
    return re.sub(r"[^\w-]+", "-", title).strip("-")[:40] or "chat"


EXPORT_ALL = "export_all"


def _all_button(layer) -> list[cl.Action]:
    """The Export all button, where a history holds the user's other chats."""
    if layer is None:
        return []
    return [cl.Action(name=EXPORT_ALL, payload={}, label=say("export.all"), tooltip=say("export.all.tip"))]


async def _own_threads(layer) -> list[str] | None:
    """The ids of the signed-in user's chats, oldest first (None: no user the history knows). The user is the
    session's, checked by Chainlit at the request; the query keeps only their threads."""
    user = door.session().user
    owner = await layer.get_user(user.identifier) if user is not None else None
    if owner is None:
        return None
    rows = await layer.execute_sql(query='SELECT "id" FROM threads WHERE "userId" = :user ORDER BY "createdAt"',
                                   parameters={"user": owner.id})
    return [row["id"] for row in rows] if isinstance(rows, list) else None


async def _stored_chat(engine, layer, thread_id: str) -> tuple[str, str, str] | None:
    """One stored chat as its export's (stem, Markdown, JSON), its turns and sidebar read as a reopened chat's;
    None for a chat with no answered question (nothing to export)."""
    thread = await layer.get_thread(thread_id)
    turns = turns_from(thread, await attachments.stored(thread_id)) if thread else []
    if not turns:
        return None
    metadata = thread.get("metadata") or {}
    metadata = json.loads(metadata) if isinstance(metadata, str) else metadata  # SQLite's JSON comes as text
    prefs = sidebar.resumed((metadata if isinstance(metadata, dict) else {}).get("chat_settings") or {},
                            engine.settings, engine.preset_name)
    name = thread.get("name")
    title = " ".join(name.split())[:60] if isinstance(name, str) and name.strip() else _title(turns)
    args = (turns, engine.settings.model, engine.preset_name,
            prefs.sampling.model_dump(include={*CHAT_SAMPLING, "seed"}), prefs.system_prompt, title)
    return _stem(title), exchange.as_markdown(*args, door.language()), exchange.as_json(*args)


async def export_all(engine, layer) -> None:
    """Every chat of the signed-in user as one zip: each chat's Markdown and JSON, as Export makes them."""
    threads = await _own_threads(layer) if layer is not None else None
    if threads is None:
        return await cl.ErrorMessage(content=say("export.all.no_history"), author="system").send()
    chats = [chat for thread_id in threads if (chat := await _stored_chat(engine, layer, thread_id))]
    if not chats:
        return await cl.ErrorMessage(content=say("export.all.nothing"), author="system").send()
    archive = await asyncio.to_thread(exchange.as_zip, chats)  # many chats take a while to pack: off the loop
    day = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    notice = cl.Message(content=say("export.all.done", count=len(chats)), author="system",
                        elements=[cl.File(name=f"chats-{day}.zip", content=archive, mime="application/zip",
                                          display="inline")])
    transient(notice, layer)  # made again at any time from the history
    await notice.send()


async def _refuse(why: str) -> None:
    await cl.ErrorMessage(content=say("import.refused", why=why), author="system").send()


async def import_chat(engine, layer, message: cl.Message) -> None:
    if layer is None:
        return await cl.ErrorMessage(content=say("import.no_history"), author="system").send()
    files = [element for element in message.elements or [] if getattr(element, "path", None)]
    if not files:  # the chip pressed with nothing attached: the chat asks for the file
        files = await file_ask.asked(layer, say("import.ask"), accept=file_ask.JSON) or []
        if not files:
            return
    if len(files) != 1:
        return await _refuse(say("import.attach_one"))
    file, most = files[0], config().features.spontaneous_file_upload.max_size_mb * 1024 * 1024
    if not file.name.lower().endswith((".json", ".jsonl")) and "json" not in file_ask.mime(file):
        return await _refuse(say("import.not_json", name=file.name, attach=say("import.attach_one")))
    if os.path.getsize(file.path) > most:
        return await _refuse(say("import.too_large", name=file.name, mb=most // 1024 // 1024))
    data = await asyncio.to_thread(_read, file.path)
    try:  # off the event loop: a large file takes a while to read, and every chat's stream runs on the loop
        imported = await asyncio.to_thread(exchange.parse, data, engine.max_model_len or exchange.MODEL_CONTEXT)
    except exchange.ImportRefused as why:
        return await _refuse(refusal(file.name, why))
    left_out = _checked_settings(engine, imported)
    thread_id = await _store(layer, imported)
    await cl.Message(content=say("import.done", count=len(imported.turns), title=text.plain(imported.title),
                                 thread=thread_id) + left_out, author="system").send()


def refusal(name: str, why: exchange.ImportRefused) -> str:
    """Why the file `name` was not imported, in the chat's language (the history words its refusals by key)."""
    return say("import.file_refused", name=name, why=why.in_language(door.language()))


def left_out_words(dropped: list[exchange.Said], refused: dict[str, str]) -> list[str]:
    """What an import left out, in the chat's language: what the history dropped (its words by key), and each
    setting the sidebar refused, by its name in the sidebar, with why."""
    lang = door.language()
    return [*(d.in_language(lang) for d in dropped),
            *(say("import.setting_left_out", name=say_known(f"setting.{key}", key), why=why.rstrip(".。"))
              for key, why in refused.items())]


def _checked_settings(engine, imported: exchange.Imported) -> str:
    """Keep the imported settings the sidebar would take, each on its own; say what was left out and why."""
    base = sidebar.defaults(engine.settings, engine.preset_name)
    refused = sidebar.each_valid(imported.settings, base, engine.settings)[1]
    imported.settings = {key: value for key, value in imported.settings.items() if key not in refused}
    dropped = left_out_words(imported.dropped, refused)
    if not dropped:
        return ""
    return say("import.left_out", dropped="; ".join(text.plain(d) for d in dropped))



def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


async def _store(layer, imported: exchange.Imported) -> str:
    """The imported chat as a new thread of the signed-in user: its messages as steps that history/turns.py reads
    back (each reply marked with the question it answers), its settings as the thread's sidebar."""
    user = door.session().user
    owner = await layer.get_user(user.identifier) if user is not None else None
    thread_id = str(uuid.uuid4())
    imported.title = imported.title or _title(imported.turns)
    await layer.update_thread(thread_id, name=say("import.title", title=imported.title),
                              user_id=owner.id if owner else None, metadata={"chat_settings": imported.settings})
    start, asked, steps = datetime.now(timezone.utc).replace(tzinfo=None), None, []
    for index, turn in enumerate(imported.turns):
        step_id, at = str(uuid.uuid4()), (start + timedelta(milliseconds=index)).isoformat() + "Z"
        user_turn = turn["role"] == "user"
        # a question the file holds no answer to stays in the prompt when the chat is reopened (history/turns.py)
        metadata = {"imported": True} if user_turn else {"for": asked, "answer": turn["content"], "finish": "stop"}
        steps.append({
            "id": step_id, "threadId": thread_id, "name": user.identifier if user_turn and user else config().ui.name,
            "type": "user_message" if user_turn else "assistant_message", "output": turn["content"],
            "createdAt": at, "start": at, "end": at, "metadata": metadata, "streaming": False})
        asked = step_id if user_turn else asked

    async def write():
        for step in steps:
            await layer.create_step(step)

    await write_now(write)  # now, even from a chat that has sent nothing but the Import command
    return thread_id
