"""The library through the OpenAI-compatible API: a chat completion's extra body field `library`.

`"library": true` answers the request's last user message from the whole library, `"library": ["name", ...]` from
the documents whose names start so; the OpenAI clients send it as `extra_body`. The best passages that fit go
before the last user message's words, numbered with their documents, as a chat's do (ui/library.py), and the field
is taken out before vLLM reads the request. Whose library: the user whose own key sends the request
(api/callers.py), anywhere; without a user's key, the library of the user who chats on this machine without
signing in (engine/who.LOCAL), only while the server listens on loopback and the request comes from this
machine itself (web/guard.py's rule: a request through a proxy is never the local user); otherwise (the
operator's CHAT_API_KEY names no user) the field is refused with a 400 saying so, rather than guessing a user.
The passages used are named in the response's `X-Library-Sources` header and, because OpenAI clients hide headers,
in its body too (`library_sources`, a list, and `library_note` where it has one: a named document none of whose
passages matches the question's words is answered from its opening passages, as the chat answers, and said so), as
fields that those clients keep (the `openai` client's `model_extra`).

The field comes from outside, so the work it causes is bounded on the event loop: at most `MAX_NAMES` names of at
most `MAX_NAME_CHARS` characters each (a library holds at most history.library.MAX_DOCUMENTS documents), the
library searched by the question's first `MAX_QUESTION_CHARS` characters, and a refusal quotes at most a few of
the names asked and of the documents held, never the whole request or library.
"""

from dataclasses import dataclass

from history import library

FIELD = "library"
MAX_NAMES = 100  # far more documents than one question is about; each name is matched against every document
MAX_NAME_CHARS = 255  # the longest file name most file systems allow
MAX_QUESTION_CHARS = 100_000  # the library is searched by this much of the question; the model reads all of it
QUOTED_NAMES = 5  # a refusal quotes at most this many of the names asked
LISTED_DOCUMENTS = 20  # and lists at most this many of the library's documents
QUOTED_CHARS = 60  # each shortened to this many characters


class FieldRefused(Exception):
    """A `library` field that cannot be served; the text says why and what to do."""


@dataclass
class Sources:
    """What the library gave a request: each passage's place ("[1] notes.txt, passage 2"), and a note or ''."""

    places: list[str]
    note: str = ""

    def header(self) -> str:
        return "; ".join(self.places)

    def fields(self) -> dict:
        return {"library_sources": self.places, **({"library_note": self.note} if self.note else {})}


async def apply(request: dict, layer, user: str | None) -> Sources | None:
    """Take the field out of `request` (a chat completion's parsed body, changed in place) and put the library's
    passages into its last user message; returns what was used (None: the field was false or absent).
    `user`: whose library, or None when this request may read none. Raises FieldRefused."""
    wanted = request.pop(FIELD, None)
    if wanted is False or wanted is None:
        return None
    _check(wanted)
    if layer is None:
        raise FieldRefused("The library is kept in the chat history, which is off on this server (CHAT_HISTORY=false).")
    if user is None:
        raise FieldRefused("'library' reads the library of the user whose own key sends the request (the chat's "
                           "Keys command makes one), or of this machine's own user for requests sent from this "
                           "machine to a server on 127.0.0.1; this request's key names no user. Send your own key.")
    messages = request.get("messages")
    asked = next((m for m in reversed(messages) if isinstance(m, dict) and m.get("role") == "user"), None) \
        if isinstance(messages, list) else None
    if asked is None or not isinstance(asked.get("content"), str):
        raise FieldRefused("'library' needs a chat request whose last user message is text.")
    return await _put_in(layer, user, wanted, asked)


def _check(wanted) -> None:
    """Refuse a field that is neither true nor a list of names within the limits, before any work is done on it."""
    if wanted is True:
        return
    if not (isinstance(wanted, list) and all(isinstance(n, str) for n in wanted)):
        raise FieldRefused("'library' must be true (the whole library) or a list of document names.")
    if len(wanted) > MAX_NAMES:
        raise FieldRefused(f"'library' lists {len(wanted)} names; it may list at most {MAX_NAMES}: name fewer "
                           "documents, or send true to search the whole library.")
    longest = max(map(len, wanted), default=0)
    if longest > MAX_NAME_CHARS:
        raise FieldRefused(f"'library' has a name of {longest} characters; a document name may be at most "
                           f"{MAX_NAME_CHARS}: send the start of the name.")


async def _put_in(layer, user: str, wanted, asked: dict) -> Sources:
    """The passages of the documents `wanted` (True: all) that best match the question, put before its words; of
    named documents none of whose passages matches, their opening passages."""
    only = None
    if isinstance(wanted, list):
        documents = await library.documents(layer, user)
        starts = tuple(name.lower() for name in wanted)  # str.startswith tries them all in one call
        only = [d.id for d in documents if d.name.lower().startswith(starts)]
        if not only:
            raise FieldRefused(f"No document in the library is named {_quoted(wanted, QUOTED_NAMES)}; it holds: "
                               f"{_quoted([d.name for d in documents], LISTED_DOCUMENTS, 'nothing yet')}.")
    question = asked["content"][:MAX_QUESTION_CHARS]
    found, note = await library.search(layer, user, question, library.MOST_PASSAGES, only), ""
    if only and not found:
        found = await library.opening(layer, user, only, library.MOST_PASSAGES)
        note = (f"Nothing in {_quoted(sorted({p.document for p in found}), QUOTED_NAMES)} matched the question's other "
                "words, so the reply draws on the documents' opening passages.") if found else ""
    kept, _ = library.fitting(found, library.MOST_TOKENS)
    if kept:
        asked["content"] = f"{library.prompt_text(kept)}\n\n{asked['content']}"
    elif not note:
        note = "No passage of the library matched the question: the reply draws on no document."
    return Sources([library.place(n, p) for n, p in enumerate(kept, 1)], note)


def _quoted(names: list[str], most: int, none: str = "(none given)") -> str:
    """At most `most` of `names`, each shortened, and how many more there are: a refusal stays a sentence."""
    shown = [name if len(name) <= QUOTED_CHARS else name[:QUOTED_CHARS - 1] + "…" for name in names[:most]]
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return (", ".join(shown) or none) + more
