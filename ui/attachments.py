"""Files attached to a message, as text for the prompt: read, refused, and kept with the chat.

Chainlit's upload route (`/project/file`) keeps a file in the session's folder when its declared type and
extension match `[features.spontaneous_file_upload]` in .chainlit/config.toml, which the browser's picker
and drop zone filter by too; the message then carries the files as elements. A declared type is only what
the client says, so each file is read here: text (UTF-8, UTF-16 with its byte-order mark, else the encoding
charset-normalizer finds) or a PDF's text (pypdf, in a child process bounded in time and in text:
ui/pdf_reader.py). Anything else, and an empty file, is refused in the chat, naming what is accepted, and the
message is not answered. engine/chat.py puts the text before the user's words and cuts what does not fit the
context.

The chat's turns keep the text as the model read it (cut where the context cut it). With a history it is kept
in a table of its own beside Chainlit's (history/schema.py), so a reopened chat's prompt has it again: without a
storage service Chainlit keeps no uploaded file, and a step's metadata goes to the browser.
Each server process keeps its uploads in a folder of its own (chainlit_door/patches.py, `own_upload_folder`).
"""

import asyncio
import contextlib
import time
from collections import defaultdict
from pathlib import Path

import chainlit as cl
from chainlit_door.server import config

from history import tables
from history.layer import valid_text
from lifetime.tasks import spawn
from ui import pdf_reader
from ui.words import say
from chainlit_door import sessions as door

BOMS = [(b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")]
SNIFF_BYTES = 8192  # a NUL byte this early means binary data (text in UTF-16 has its byte-order mark)
WRITES: dict[str, asyncio.Task] = {}  # message id -> the latest write of its attachments (`keep`)


class Refused(Exception):
    """A file that cannot go into the prompt; the text says why."""


def accepted() -> str:
    """What may be attached, as the refusal names it, from the same settings Chainlit's upload route applies."""
    upload = config().features.spontaneous_file_upload
    kinds = upload.accept if isinstance(upload.accept, dict) else {kind: [] for kind in upload.accept or []}
    extensions = sorted({ext for listed in kinds.values() for ext in listed} - {".pdf"})
    pdf = say("file.accepted_pdf") if "application/pdf" in kinds else ""
    return say("file.accepted", extensions=" ".join(extensions), pdf=pdf, files=upload.max_files,
               mb=upload.max_size_mb)


def decode(data: bytes) -> str:
    """The text of a file's bytes, with plain newlines; Refused when they are not text."""
    for bom, codec in BOMS:
        if data.startswith(bom):
            return data[len(bom):].decode(codec, errors="replace").replace("\r\n", "\n")
    if b"\x00" in data[:SNIFF_BYTES]:
        raise Refused(say("file.binary"))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        from charset_normalizer import from_bytes

        found = from_bytes(data).best()
        if found is None:
            raise Refused(say("file.encoding")) from None
        text = str(found)
    return text.replace("\r\n", "\n").replace("\x00", "")  # a NUL means nothing to the model; PostgreSQL refuses it


def pdf_text(data: bytes, most_chars: int, seconds: float | None = None) -> str:
    """The text of a PDF's pages, a blank line between them; Refused when it is damaged, holds no text, holds
    more than `most_chars` of it, or takes too long to read (ui/pdf_reader.py reads it, bounded by `seconds`, what
    its message has left)."""
    answer = pdf_reader.read(data, most_chars, seconds)
    refused, page = answer.get("refused"), answer.get("page")
    if refused == "slow":
        where = say("pdf.slow_page", page=page, page_s=pdf_reader.PAGE_S) if page else ""
        raise Refused(say("pdf.slow", total=pdf_reader.TOTAL_S, where=where))
    if refused == "long":
        raise Refused(say("pdf.too_long", size=_size(most_chars), page=page))
    if refused == "locked":
        raise Refused(say("pdf.locked"))
    if refused == "damaged":
        raise Refused(say("pdf.damaged", error=answer.get("error")))
    if not answer["text"]:
        raise Refused(say("pdf.no_text"))
    return answer["text"]


def _size(chars: int) -> str:
    return f"{chars / 2**20:g} MB"


def read(path: str, seconds: float | None = None) -> str:
    """A file's text. A PDF's can be longer than the file: no more is taken than a text file may be long, and it is
    read within `seconds` (None: pdf_reader.TOTAL_S)."""
    data = Path(path).read_bytes()
    if not data:
        raise Refused(say("file.empty"))
    most_chars = config().features.spontaneous_file_upload.max_size_mb * 2**20
    text = pdf_text(data, most_chars, seconds) if data.startswith(b"%PDF-") else decode(data)
    if len(text) > most_chars:
        raise Refused(say("file.too_long", size=_size(most_chars)))
    return text


async def question(message: cl.Message) -> dict | None:
    """The user's turn for the prompt, its attached files read as text; None when a file is refused (the chat
    is told why and what is accepted)."""
    files = [element for element in message.elements or [] if getattr(element, "path", None)]
    asked = {"id": message.id, "role": "user", "content": valid_text(message.content)}
    if asked["content"] != message.content:
        await cl.Message(content=say("message.not_text"), author="system").send()
    if not files:
        return asked
    most = config().features.spontaneous_file_upload.max_files
    problems = []
    if len(files) > most:
        problems.append(say("file.too_many", count=len(files), most=most))
    parts = []
    async with _reading(door.session().user):  # a user's messages are read one after another
        deadline = time.monotonic() + pdf_reader.TOTAL_S  # and all the files of one within one budget
        for element in files:
            try:
                if (left := deadline - time.monotonic()) <= 0:
                    raise Refused(say("file.no_time", total=pdf_reader.TOTAL_S))
                parts.append({"name": element.name, "text": await asyncio.to_thread(read, element.path, left)})
            except Refused as why:
                problems.append(say("file.refused", name=element.name, why=why))
            except OSError as error:
                problems.append(say("file.unreadable", name=element.name,
                                    error=error.strerror or type(error).__name__))
    if problems:
        await cl.ErrorMessage(content=say("file.not_sent", problems=" ".join(problems), accepted=accepted()),
                              author="system").send()
        return None
    return {**asked, "attachments": parts}


_READERS: dict[str, asyncio.Lock] = {}  # one per user who sent files (a lock is a few hundred bytes)


@contextlib.asynccontextmanager
async def _reading(user):
    """One message's files at a time per user: five messages of crafted PDFs sent together take one budget after
    another, never five readers at once (other users' files are read beside them)."""
    async with _READERS.setdefault(getattr(user, "identifier", None) or "", asyncio.Lock()):
        yield


def as_sent(asked: dict, stats) -> dict:
    """The turn as the model read it: an attachment the context cut keeps the start that went in, so the
    chat's later prompts (and a reopened chat's) render that much, not the whole file again."""
    if stats is None or not stats.cut:
        return asked
    parts = list(asked["attachments"])
    for cut in stats.cut:
        parts[cut.index] = {**parts[cut.index], "text": parts[cut.index]["text"][:cut.kept_chars]}
    return {**asked, "attachments": parts}


def keep(layer, asked: dict) -> None:
    """Store a question's attachments with its chat, in the background (a reply must not wait for the write),
    after an earlier write of the same question's: once before its reply, again as sent when it was cut."""
    thread_id = door.session().thread_id
    if layer is None or not asked.get("attachments") or thread_id in layer.deleted:
        return
    previous = WRITES.get(asked["id"])

    async def write():
        if previous is not None:
            await asyncio.gather(previous, return_exceptions=True)
        for position, part in enumerate(asked["attachments"]):
            await tables.keep_attachment(layer, asked["id"], position, thread_id, part["name"], part["text"])

    task = WRITES[asked["id"]] = spawn(write())
    task.add_done_callback(lambda done: WRITES.pop(asked["id"]) if WRITES.get(asked["id"]) is done else None)


async def stored(thread_id: str) -> dict[str, list[dict]]:
    """The attachments of a stored chat's questions, by question id ({} without a history)."""
    from chainlit_door.server import data_layer

    layer = data_layer()
    rows = await tables.attachments(layer, thread_id) if hasattr(layer, "execute_sql") else []
    found = defaultdict(list)
    for row in rows:
        found[row["for_id"]].append({"name": row["name"], "text": row["text"]})
    return dict(found)
