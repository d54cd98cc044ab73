"""The user's library in the chat: the Library command (add the attached files, list, remove) and a question
answered from the library's best passages, with its sources shown under the reply.

The documents are kept by history/library.py in the history's database, each user's apart. A question draws on
the library when the chat's "Answer from my library" switch is on, or when it names documents with @name
(those only). The passages found go into the prompt as one numbered attachment of the question, so the chat's
later prompts, a reopened chat and an export have them as the model read them (ui/attachments.py keeps a
question's attachments); the reply's last line names each passage's document and place. The list of documents
carries a Remove button for each, which asks first (a second button, "Yes, remove", removes it: nothing brings a
removed document back), and an Add documents button that opens an upload box in the chat. Typing @ in
the message box offers the user's document names (Chainlit 2.12's box suggests only its "/" commands, so
public/library-names.js asks web/library_names.py for them), and a picked name is written as this module reads
it: `@name`, or `@"name"` when it has a space.
"""

import asyncio
import os
import re
from dataclasses import asdict, dataclass

import chainlit as cl

from history import library
from history.writes import transient
from ui import attachments, file_ask
from ui.text import TABLE, no_images
from engine.who import asking
from ui.words import in_every_language, say
from chainlit_door import sessions as door

LIBRARY_ATTACHMENT = "From your library"
_PICKED = re.compile(r'(?:^|\s)@(?:"([^"]+)"|(\S+))')
_PUNCTUATION = ".,:;!?)]}'\"，。：；！？、）」』"  # "@kettle, how...": what follows a name is not part of it
REMOVE = in_every_language("library.remove_word")  # the word that removes a document, in any language
REMOVE_ACTION = "library_remove"  # a listed document's button (its callback is below): it asks first
CONFIRM_ACTION = "library_remove_confirmed"  # the asking's "Yes, remove" button, which removes the document
ADD_ACTION = "library_add"  # the list's "Add documents" button: an upload box in the chat (ui/file_ask.py)
SHORT_NAME = 24  # characters of a name on its button: a row of buttons must fit a phone's width


@dataclass
class Found:
    """What the library added to a question: its passages, numbered from 1, and about how many tokens."""

    passages: list[library.Passage]
    tokens: int
    note: str = ""  # what the user should know about how they were chosen; alone when there are none

    def record(self) -> dict:
        """What the reply's metadata keeps of it, so a Regenerate (also of a reopened chat) names the same
        sources: the prompt it answers holds the same passages."""
        return {"passages": [asdict(p) for p in self.passages], "tokens": self.tokens, "note": self.note}

    @classmethod
    def stored(cls, metadata: dict | None) -> "Found | None":
        """The sources a reply named, from its metadata (None: it drew on no library, or a record of another
        version)."""
        record = (metadata or {}).get("found")
        try:
            return cls([library.Passage(**p) for p in record["passages"]], record["tokens"], record["note"])
        except (KeyError, TypeError):
            return None

    def sources_line(self) -> str:
        if not self.passages:
            return f"*{self.note}*"
        note = say("library.note", note=self.note) if self.note else ""
        places = " · ".join(no_images(_place(n, p)) for n, p in enumerate(self.passages, 1))
        return say("library.sources", note=note, count=_passages(len(self.passages)), tokens=self.tokens,
                   places=places)


def _place(number: int, passage: library.Passage) -> str:
    """A source's name in the chat's language, "[1] notes.txt, passage 2": the sources line names each source
    element by it, which Chainlit turns into a link to it."""
    return say("library.place", number=number, document=passage.document, position=passage.position + 1)


def _passages(count: int) -> str:
    return say("library.passages_many" if count > 1 else "library.passages_one", count=count)



def _size_text(size: int) -> str:
    return f"{size / 2**20:.1f} MB" if size >= 2**20 else f"{max(size / 1024, 0.1):.1f} KB"


async def on_command(layer, message: cl.Message) -> None:
    """The Library command: add its attached files, remove one (`remove N` or a name), or list the documents."""
    if layer is None:
        await cl.ErrorMessage(content=say("library.no_history"), author="system").send()
        return
    files = [element for element in message.elements or [] if getattr(element, "path", None)]
    words = message.content.strip()  # what was typed beside the chip (`/library` is the chip: ui/chips.py)
    if files:
        await _add(layer, files)
    elif words.lower().startswith(REMOVE):
        await _remove(layer, words[len(next(w for w in REMOVE if words.lower().startswith(w))):].strip())
    else:
        await _list(layer)


async def _add(layer, files) -> None:
    """Add each file; one named as a document already there takes its place (a file added again is a new
    version of it), once the new one is kept."""
    user, added, problems = asking().name, [], []
    for element in files:
        try:
            text = await asyncio.to_thread(attachments.read, element.path)
            size = os.path.getsize(element.path)
            earlier = [d for d in await library.documents(layer, user) if d.name == element.name]
            document = await library.add(layer, user, element.name, size, text)
            for copy in earlier:
                await library.remove(layer, user, copy.id)
            added.append(say("library.replaced_one" if earlier else "library.added_one", name=no_images(document.name),
                             size=_size_text(size), count=_passages(document.passages)))
        except (attachments.Refused, library.LibraryFull) as why:
            why = why.in_language(door.language()) if isinstance(why, library.LibraryFull) else why
            problems.append(say("file.refused", name=no_images(element.name), why=why))
        except OSError as error:
            problems.append(say("file.unreadable", name=no_images(element.name),
                                error=error.strerror or type(error).__name__))
        except Exception as error:  # the database's own error: nothing of the file was kept
            problems.append(say("library.db_failed", name=no_images(element.name), error=type(error).__name__))
    lines = [say("library.added", added=", ".join(added)) if added else ""]
    if problems:
        lines.append(say("library.not_added", problems=" ".join(problems), accepted=attachments.accepted()))
    if added:
        lines.append(say("library.turn_on"))
    await (cl.ErrorMessage if problems and not added else cl.Message)(
        content="\n\n".join(line for line in lines if line), author="system").send()


async def _remove(layer, which: str) -> None:
    user = asking().name
    documents = await library.documents(layer, user)
    chosen = [d for n, d in enumerate(documents, 1) if which == str(n) or d.name.lower() == which.lower()]
    if not which or not chosen:
        await cl.ErrorMessage(content=say("library.no_such", which=which), author="system").send()
        return
    await library.remove(layer, user, chosen[0].id)
    await cl.Message(content=say("library.removed", name=no_images(chosen[0].name)), author="system").send()


async def _list(layer) -> None:
    documents = await library.documents(layer, asking().name)
    add = cl.Action(name=ADD_ACTION, payload={}, icon="file-plus", label=say("library.add_button"),
                    tooltip=say("library.add_tip"))
    if not documents:
        await cl.Message(content=say("library.empty", how=say("library.how")), author="system",
                         actions=[add]).send()
        return
    rows = [f"| {n} | {_cell(d.name)} | {_size_text(d.bytes)} | {d.created_at[:16].replace('T', ' ')} | {d.passages} |"
            for n, d in enumerate(documents, 1)]
    table = "\n".join([say("library.head"), "|---|---|---|---|---|", *rows])
    buttons = [cl.Action(name=REMOVE_ACTION, payload={"id": d.id}, icon="trash-2",
                         label=say("library.remove_button", n=n, name=_short(d.name)),
                         tooltip=say("library.remove_tip", name=d.name)) for n, d in enumerate(documents, 1)]
    content = say("library.list", count=len(documents), table=table, how=say("library.how"))
    await cl.Message(content=f"{content}\n\n{say('library.buttons')}", author="system", type=TABLE,
                     actions=[add, *buttons]).send()


@cl.action_callback(ADD_ACTION)
async def add_pressed(action: cl.Action) -> None:
    """The list's "Add documents" button: the files picked in the upload box it opens join the library."""
    from chainlit_door.server import config
    from chainlit_door.server import data_layer

    layer = data_layer()
    if layer is None:
        return await cl.ErrorMessage(content=say("library.no_history"), author="system").send()
    try:
        picked = await file_ask.asked(layer, say("library.ask"),
                                      files=config().features.spontaneous_file_upload.max_files)
        if picked:
            await _add(layer, picked)
    finally:  # Chainlit marks the chat busy again once an upload box is answered, and only a message's end clears it
        await door.emitter().task_end()


def _short(name: str) -> str:
    return name if len(name) <= SHORT_NAME else name[:SHORT_NAME - 1] + "…"


async def _pressed_document(action: cl.Action):
    """The history and the user's document a button names, or (layer, None) when it is no longer theirs (said)."""
    from chainlit_door.server import data_layer

    layer, document_id = data_layer(), (action.payload or {}).get("id")
    documents = {d.id: d for d in await library.documents(layer, asking().name)} if layer is not None else {}
    if not isinstance(document_id, str) or document_id not in documents:
        await cl.ErrorMessage(content=say("library.already_gone"), author="system").send()
        return layer, None
    return layer, documents[document_id]


@cl.action_callback(REMOVE_ACTION)
async def remove_pressed(action: cl.Action) -> None:
    """A listed document's Remove button asks first: a removed document cannot come back, and a button is pressed
    by a slip. The asking (shown, never stored) carries the button that removes it."""
    layer, document = await _pressed_document(action)
    if document is None:
        return await action.remove()
    sure = cl.Action(name=CONFIRM_ACTION, payload={"id": document.id, "listed": action.id, "list": action.forId},
                     icon="trash-2", label=say("library.remove_sure_button", name=_short(document.name)),
                     tooltip=say("library.remove_tip", name=document.name))
    asking_first = cl.Message(content=say("library.remove_sure", name=no_images(document.name)), author="system",
                              actions=[sure])
    transient(asking_first, layer)
    await asking_first.send()


@cl.action_callback(CONFIRM_ACTION)
async def remove_confirmed(action: cl.Action) -> None:
    """The asking's "Yes, remove": the document goes (if it is still this user's), and its buttons with it (the
    list's other buttons stay)."""
    layer, document = await _pressed_document(action)
    if document is not None:
        await library.remove(layer, asking().name, document.id)
        await cl.Message(content=say("library.removed", name=no_images(document.name)), author="system").send()
    payload = action.payload or {}
    if isinstance(payload.get("listed"), str):  # the list's Remove button of it, by its id as the page knows it
        await cl.Action(name=REMOVE_ACTION, payload={}, id=payload["listed"], forId=payload.get("list")).remove()
    await action.remove()


def _cell(name: str) -> str:
    """A name as one cell of a Markdown table (its "|" would end the cell, an image in it be fetched)."""
    return no_images(name.replace("\\", "\\\\").replace("|", "\\|"))


def _named_by(name: str, documents: list[library.Document]) -> list[library.Document]:
    return [d for d in documents if name and d.name.lower().startswith(name.lower())]


def picked(question: str, documents: list[library.Document]) -> tuple[list[library.Document], list[str], str]:
    """The documents a question names with @name (a name's start is enough), the @names that name none (a
    decorator, a CSS rule, an address: words of the question like any other), and the question without the
    names of documents (the words to search by)."""
    chosen, unknown = [], []

    def naming(match: re.Match) -> str:
        name = match.group(1) or match.group(2)
        matches = _named_by(name, documents) or _named_by(name.rstrip(_PUNCTUATION), documents)
        if not matches:
            unknown.append(name)
            return match.group(0)
        chosen.extend(d for d in matches if d not in chosen)
        return " "

    words = _PICKED.sub(naming, question)
    return chosen, unknown, words


def budget(context: int | None, max_tokens: int, system_prompt: str, question: str) -> int:
    """About how many tokens the library's passages may take: what the context leaves after the reply (at most
    half of it), the system prompt and the question, and no more than MOST_TOKENS; the chat's earlier turns are
    trimmed to make room as they are for attachments (engine/chat.py)."""
    if not context:
        return library.MOST_TOKENS
    left = context - min(max_tokens, context // 2) - library.tokens(system_prompt) - library.tokens(question) - 64
    return max(0, min(library.MOST_TOKENS, left))


async def with_passages(layer, asked: dict, on: bool, context: int | None, max_tokens: int,
                        system_prompt: str) -> tuple[dict, Found | None]:
    """The question with the library's best passages as its attachment, and what they are (None: the library is
    not used for it). An @word that names no document is part of the question; with the library on, the chat is
    told quietly that it named none. A question that names documents draws on them even when none of its other
    words is found in them ("summarise @report"): then on their first passages."""
    question = asked.get("content") or ""
    if layer is None or not (on or "@" in question):
        return asked, None
    user = asking().name
    documents = await library.documents(layer, user)
    chosen, unknown, words = picked(question, documents)
    if unknown and documents and on:
        names = ", ".join("@" + name for name in unknown)
        await cl.Message(content=say("library.unknown_one" if len(unknown) == 1 else "library.unknown_many",
                                     names=names), author="system").send()
    if not (on or chosen):
        return asked, None
    ids = [d.id for d in chosen] or None
    room = budget(context, max_tokens, system_prompt, question)
    found = await library.search(layer, user, words, library.MOST_PASSAGES, ids)
    opening = chosen and not found
    if opening:  # nothing matched the words beside the names: what the user expects is the named documents
        found = await library.opening(layer, user, ids, library.MOST_PASSAGES)
    kept, used = library.fitting(found, room)
    if not kept:
        return asked, Found([], 0, say("library.no_room" if found else "library.nothing_found"))
    part = {"name": LIBRARY_ATTACHMENT, "text": library.prompt_text(kept)}
    note = say("library.opening", documents=_documents(chosen)) if opening else ""
    return {**asked, "attachments": [*asked.get("attachments", []), part]}, Found(kept, used, note)


def _documents(chosen: list[library.Document]) -> str:
    return ", ".join(no_images(d.name) for d in chosen)


def source_elements(found: Found) -> list[cl.Text]:
    """Each passage the reply drew on, as an element beside it: the passage's text, named by number, document
    and place."""
    return [cl.Text(name=_place(n, p), content=p.text, display="side")
            for n, p in enumerate(found.passages, 1)]
