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
NO_HISTORY = ("The library is kept in the chat history's database, which is off on this server "
              "(CHAT_HISTORY=false): turn it on and restart to keep documents.")
HOW = ("Attach files to the **Library** command to add them (text, code, Markdown, CSV, JSON or PDF); send "
       "`remove` and a document's number or name to remove one. Turn on *Answer from my library* in the settings, "
       "or write @name in a message to answer it from those documents.")


@dataclass
class Found:
    """What the library added to a question: its passages, numbered from 1, and about how many tokens."""

    passages: list[library.Passage]
    tokens: int

    def sources_line(self) -> str:
        places = " · ".join(library.place(n, p) for n, p in enumerate(self.passages, 1))
        count = f"{len(self.passages)} passage{'s' if len(self.passages) > 1 else ''}"
        return f"*From your library: {count}, about {self.tokens} tokens — {places}*"


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
    rows = [f"| {n} | {d.name} | {_size_text(d.bytes)} | {d.created_at[:16].replace('T', ' ')} | {d.passages} |"
            for n, d in enumerate(documents, 1)]
    table = "\n".join(["| # | Document | Size | Added (UTC) | Passages |", "|---|---|---|---|---|", *rows])
    await cl.Message(content=f"Your library ({len(documents)} documents):\n\n{table}\n\n{HOW}",
                     author="system").send()


def picked(question: str, documents: list[library.Document]) -> tuple[list[library.Document], list[str]]:
    """The documents a question names with @name (a name's start is enough), and the names that match none."""
    chosen, unknown = [], []
    for quoted, bare in _PICKED.findall(question):
        name = (quoted or bare).lower()
        matches = [d for d in documents if d.name.lower().startswith(name)]
        if matches:
            chosen += [d for d in matches if d not in chosen]
        else:
            unknown.append(quoted or bare)
    return chosen, unknown


def budget(context: int | None, max_tokens: int, system_prompt: str, question: str) -> int:
    """About how many tokens the library's passages may take: what the context leaves after the reply (at most
    half of it), the system prompt and the question, and no more than MOST_TOKENS; the chat's earlier turns are
    trimmed to make room as they are for attachments (engine/chat.py)."""
    if not context:
        return library.MOST_TOKENS
    left = context - min(max_tokens, context // 2) - library.tokens(system_prompt) - library.tokens(question) - 64
    return max(0, min(library.MOST_TOKENS, left))


async def with_passages(layer, asked: dict, on: bool, context: int | None, max_tokens: int,
                        system_prompt: str) -> tuple[dict, Found | None] | None:
    """The question with the library's best passages as its attachment, and what they are; unchanged (and None)
    when the library is off for it; None when it names documents that are not in the library (the chat is
    told, and the question is not answered)."""
    question = asked.get("content") or ""
    if layer is None or not (on or "@" in question):
        return asked, None
    user = _user()
    documents = await library.documents(layer, user)
    chosen, unknown = picked(question, documents)
    if unknown:
        names = ", ".join(d.name for d in documents) or "none yet"
        await cl.ErrorMessage(content=f"Your message was not sent to the model: no document in your library is "
                                      f"named {', '.join('@' + n for n in unknown)} (yours: {names}). Send it "
                                      "again with a name from the list, or without the @.", author="system").send()
        return None
    if not (on or chosen):
        return asked, None
    words = _PICKED.sub(" ", question) if chosen else question
    found = await library.search(layer, user, words, library.MOST_PASSAGES, [d.id for d in chosen] or None)
    kept, used = library.fitting(found, budget(context, max_tokens, system_prompt, question))
    if not kept:
        return asked, None
    part = {"name": LIBRARY_ATTACHMENT, "text": library.prompt_text(kept)}
    return {**asked, "attachments": [*asked.get("attachments", []), part]}, Found(kept, used)


def source_elements(found: Found) -> list[cl.Text]:
    """Each passage the reply drew on, as an element beside it: the passage's text, named by number, document
    and place."""
    return [cl.Text(name=library.place(n, p), content=p.text, display="side")
            for n, p in enumerate(found.passages, 1)]
