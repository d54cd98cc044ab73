"""The library through the OpenAI-compatible API: a chat completion's extra body field `library`.

`"library": true` answers the request's last user message from the whole library, `"library": ["name", ...]` from
the documents whose names start so; the OpenAI clients send it as `extra_body`. The best passages that fit go
before the last user message's words, numbered with their documents, as a chat's do (ui/library.py), and the field
is taken out before vLLM reads the request. Whose library: the API has one key for the whole server and no
users, so it reads the library of the user who chats on this machine without signing in (web/signin.LOCAL_USER),
and only while the server listens on loopback; elsewhere the field is refused with a 400 saying so, rather than
guessing a user. The passages used are named in the response's `X-Library-Sources` header.
"""

import json

from history import library

FIELD = "library"


class FieldRefused(Exception):
    """A `library` field that cannot be served; the text says why and what to do."""


async def apply(body: bytes, layer, user: str | None) -> tuple[bytes, str | None]:
    """The request body with the library's passages put in and the field taken out, and the sources' header
    value; the body unchanged (and None) when it has no `library` field. `user`: whose library, or None when
    the API may read none here. Raises FieldRefused."""
    try:
        request = json.loads(body)
    except ValueError:
        return body, None  # vLLM answers a body that is not JSON
    if not isinstance(request, dict) or FIELD not in request:
        return body, None
    wanted = request.pop(FIELD)
    if wanted is False or wanted is None:
        return json.dumps(request).encode(), None
    if not (wanted is True or (isinstance(wanted, list) and all(isinstance(n, str) for n in wanted))):
        raise FieldRefused("'library' must be true (the whole library) or a list of document names.")
    if layer is None:
        raise FieldRefused("The library is kept in the chat history, which is off on this server (CHAT_HISTORY=false).")
    if user is None:
        raise FieldRefused("The API reads the library of this machine's own user, and only while the server listens "
                           "on 127.0.0.1: its one key names no user. Ask in the chat instead.")
    messages = request.get("messages")
    asked = next((m for m in reversed(messages) if isinstance(m, dict) and m.get("role") == "user"), None) \
        if isinstance(messages, list) else None
    if asked is None or not isinstance(asked.get("content"), str):
        raise FieldRefused("'library' needs a chat request whose last user message is text.")
    only = None
    if isinstance(wanted, list):
        documents = await library.documents(layer, user)
        only = [d.id for d in documents if any(d.name.lower().startswith(n.lower()) for n in wanted)]
        if not only:
            raise FieldRefused(f"No document in the library is named {', '.join(wanted) or '(none given)'}; "
                               f"it holds: {', '.join(d.name for d in documents) or 'nothing yet'}.")
    found = await library.search(layer, user, asked["content"], library.MOST_PASSAGES, only)
    kept, _ = library.fitting(found, library.MOST_TOKENS)
    if kept:
        asked["content"] = f"{library.prompt_text(kept)}\n\n{asked['content']}"
    sources = "; ".join(library.place(n, p) for n, p in enumerate(kept, 1))
    return json.dumps(request).encode(), sources or None
