"""Asking for files by pointing: a chip pressed with nothing attached (Import, or the Library's "Add documents"
button) opens Chainlit's own upload box in the chat, so a newcomer never has to know that a file is attached to a
chip and then sent. The box takes what the message box takes (its types and sizes, from Chainlit's upload
settings), and is not kept in the history: it is a question of the moment, and its answer (the import, the added
documents) is the message that stays.
"""

import time

import chainlit as cl
from chainlit_door.server import config

from history.writes import transient
from ui.words import say

# How long the box waits for a file, then says it gave up: Chainlit keeps the message box off while it waits (a
# chip pressed by mistake would hold the chat that long), yet a file picked from a phone's slow folder needs time
WAIT_S = 120
JSON = {"application/json": [".json", ".jsonl"]}


def _upload_accept() -> dict[str, list[str]]:
    accept = config().features.spontaneous_file_upload.accept
    return dict(accept) if isinstance(accept, dict) else {kind: [] for kind in accept or []}


async def asked(layer, prompt: str, accept: dict[str, list[str]] | None = None, files: int = 1) -> list | None:
    """The files the user picks in an upload box shown with `prompt` (each with `.name` and `.path`), or None when
    none came in time (the chat is told so)."""
    upload = config().features.spontaneous_file_upload
    box = cl.AskFileMessage(content=prompt, accept=accept or _upload_accept(), max_files=files,
                            max_size_mb=upload.max_size_mb, timeout=WAIT_S, author="system")
    transient(box, layer)
    asked_at = time.monotonic()
    picked = await box.send()
    await box.remove()  # what was picked is told by the answer below
    if not picked:  # the wait ran out, or an answer came whose file this server does not hold
        waited = time.monotonic() - asked_at >= WAIT_S - 1
        await cl.Message(content=say("file.ask_gave_up", minutes=WAIT_S // 60) if waited else say("file.ask_lost"),
                         author="system").send()
        return None
    return picked


def mime(file) -> str:
    """A file's type as Chainlit gives it: `mime` on a message's element, `type` on an upload box's answer."""
    return getattr(file, "mime", None) or getattr(file, "type", None) or ""
