"""The user's library in the chat: the Library command (add the attached files, list, remove) and a question
answered from the library's best passages, with its sources shown under the reply.

The documents are kept by history/library.py in the history's database, each user's apart. A question draws on
the library when the chat's "Answer from my library" switch is on, or when it names documents with @name
(those only). The passages found go into the prompt as one numbered attachment of the question, so the chat's
later prompts, a reopened chat and an export have them as the model read them (ui/attachments.py keeps a
question's attachments); the reply's last line names each passage's document and place.
"""

import asyncio
import os
import re
from dataclasses import dataclass

import chainlit as cl

from history import library
from ui import attachments

COMMAND = "Library"
LIBRARY_ATTACHMENT = "From your library"
_PICKED = re.compile(r'(?:^|\s)@(?:"([^"]+)"|(\S+))')
_PUNCTUATION = ".,:;!?)]}'\"，。：；！？、）」』"  # "@kettle, how...": what follows a name is not part of it
NO_HISTORY = ("The library is kept in the chat history's database, which is off on this server "
              "(CHAT_HISTORY=false): turn it on and restart to keep documents.")
HOW = ("Attach files to the **Library** command to add them (text, code, Markdown, CSV, JSON or PDF); send "
       "`remove` and a document's number or name to remove one. Turn on *Answer from my library* in the settings, "
       "or write @name in a message to answer it from those documents.")

NOTHING_FOUND = "Nothing in your library matched this message: it was answered without the library."
NO_ROOM = ("Your library's passages did not fit the context beside this message: it was answered without them "
           "(a shorter message or a lower 'max new tokens' leaves them room).")


@dataclass
class Found:
    """What the library added to a question: its passages, numbered from 1, and about how many tokens."""

    passages: list[library.Passage]
    tokens: int
    note: str = ""  # what the user should know about how they were chosen; alone when there are none

    def sources_line(self) -> str:
        if not self.passages:
            return f"*{self.note}*"
        note = f" ({self.note})" if self.note else ""
        places = " · ".join(library.place(n, p) for n, p in enumerate(self.passages, 1))
        count = f"{len(self.passages)} passage{'s' if len(self.passages) > 1 else ''}"
        return f"*From your library{note}: {count}, about {self.tokens} tokens — {places}*"


def _user() -> str:
    user = cl.context.session.user
    return user.identifier if user is not None else "local"


def _size_text(size: int) -> str:
    return f"{size / 2**20:.1f} MB" if size >= 2**20 else f"{max(size / 1024, 0.1):.1f} KB"


async def on_command(layer, message: cl.Message) -> None:
    """The Library command: add its attached files, remove one (`remove N` or a name), or list the documents."""
    if layer is None:
        await cl.ErrorMessage(content=NO_HISTORY, author="system").send()
        return
    files = [element for element in message.elements or [] if getattr(element, "path", None)]
    words = message.content.strip()
    if words.startswith("/library"):
        words = words[len("/library"):].strip()
    if files:
        await _add(layer, files)
    elif words.lower().startswith("remove"):
        await _remove(layer, words[len("remove"):].strip())
    else:
        await _list(layer)


async def _add(layer, files) -> None:
    user, added, problems = _user(), [], []
    for element in files:
        try:
            text = await asyncio.to_thread(attachments.read, element.path)
            size = os.path.getsize(element.path)
            document = await library.add(layer, user, element.name, size, text)
            count = f"{document.passages} passage{'s' if document.passages > 1 else ''}"
            added.append(f"**{document.name}** ({_size_text(size)}, {count})")
        except (attachments.Refused, library.LibraryFull) as why:
            problems.append(f"{element.name} {why}.")
        except OSError as error:
            problems.append(f"{element.name} could not be read ({error.strerror or type(error).__name__}).")
        except Exception as error:  # the database's own error: nothing of the file was kept
            problems.append(f"{element.name} was not added: the history database failed ({type(error).__name__}); "
                            "nothing of it was kept, try again.")
    lines = [f"Added to your library: {', '.join(added)}." if added else ""]
    if problems:
        lines.append(f"Not added: {' '.join(problems)} Attach {attachments.accepted()}.")
    if added:
        lines.append("Turn on *Answer from my library* in the settings to answer from it.")
    await (cl.ErrorMessage if problems and not added else cl.Message)(
        content="\n\n".join(line for line in lines if line), author="system").send()


async def _remove(layer, which: str) -> None:
    user = _user()
    documents = await library.documents(layer, user)
    chosen = [d for n, d in enumerate(documents, 1) if which == str(n) or d.name.lower() == which.lower()]
    if not which or not chosen:
        await cl.ErrorMessage(content=f"No document in your library is '{which}': send `remove` and a document's "
                                      "number or name from the list (the Library command lists them).",
                              author="system").send()
        return
    await library.remove(layer, user, chosen[0].id)
    await cl.Message(content=f"Removed **{chosen[0].name}** from your library.", author="system").send()


async def _list(layer) -> None:
    documents = await library.documents(layer, _user())
    if not documents:
        await cl.Message(content=f"Your library is empty. {HOW}", author="system").send()
        return
    rows = [f"| {n} | {_cell(d.name)} | {_size_text(d.bytes)} | {d.created_at[:16].replace('T', ' ')} | {d.passages} |"
            for n, d in enumerate(documents, 1)]
    table = "\n".join(["| # | Document | Size | Added (UTC) | Passages |", "|---|---|---|---|---|", *rows])
    await cl.Message(content=f"Your library ({len(documents)} documents):\n\n{table}\n\n{HOW}",
                     author="system").send()


def _cell(name: str) -> str:
    """A name as one cell of a Markdown table: its "|" would end the cell."""
    return name.replace("\\", "\\\\").replace("|", "\\|")


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
    user = _user()
    documents = await library.documents(layer, user)
    chosen, unknown, words = picked(question, documents)
    if unknown and documents and on:
        await cl.Message(content=f"*{_named(unknown)} no document in your library, so {_it(unknown)} stayed part "
                                 "of your message.*", author="system").send()
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
        return asked, Found([], 0, NO_ROOM if found else NOTHING_FOUND)
    part = {"name": LIBRARY_ATTACHMENT, "text": library.prompt_text(kept)}
    note = f"nothing in {_documents(chosen)} matched your other words, so the reply draws on its start" \
        if opening else ""
    return {**asked, "attachments": [*asked.get("attachments", []), part]}, Found(kept, used, note)


def _named(names: list[str]) -> str:
    return f"{', '.join('@' + n for n in names)} name{'s' if len(names) == 1 else ''}"


def _it(names: list[str]) -> str:
    return "it" if len(names) == 1 else "they"


def _documents(chosen: list[library.Document]) -> str:
    return ", ".join(d.name for d in chosen)


def source_elements(found: Found) -> list[cl.Text]:
    """Each passage the reply drew on, as an element beside it: the passage's text, named by number, document
    and place."""
    return [cl.Text(name=library.place(n, p), content=p.text, display="side")
            for n, p in enumerate(found.passages, 1)]
