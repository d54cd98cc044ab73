"""GET or POST /chat/context: how much of the running preset's context the page's chat takes, and with the draft in
its message box (POST {"draft": text}) how much the next message will, for the line by the box
(public/context-line.js; ui/context_fill.py counts it). The chat is the one of the page's session cookie, and only
for the user signed in on that request; {"line": null} before the chat has a reply or a draft, or the engine a
context.
"""

from chainlit_door.sessions import session_of_id
from fastapi import Depends, Request
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute

from ui import chat_state, context_fill
from web.routes import put_first
from web.settings_route import SESSION_COOKIE

PATH = "/chat/context"
MOST_DRAFT_CHARS = 1_000_000  # a message over the socket's 1 MB frame is refused anyway (ui/oversized.py)


def context_route(engine) -> APIRoute:
    from chainlit_door.server import request_user

    async def context(request: Request, user=Depends(request_user())) -> JSONResponse:
        session = session_of_id(request.cookies.get(SESSION_COOKIE))
        owner = getattr(getattr(session, "user", None), "identifier", None)
        chat = chat_state.made(session) if session is not None and owner == getattr(user, "identifier", None) \
            else None
        draft = await _draft_tokens(request, engine) if chat is not None else 0
        said = None if chat is None or not (chat.context_used or draft) else context_fill.line(
            chat.context_used, engine.max_model_len, chat.prefs.sampling.max_tokens,
            request.headers.get("accept-language", "")[:2], draft)
        return JSONResponse({"line": said and said[0], "full": bool(said and said[1])},
                            headers={"Cache-Control": "no-store"})

    return APIRoute(PATH, context, methods=["GET", "POST"], include_in_schema=False)


async def _draft_tokens(request: Request, engine) -> int:
    """The model's tokens in the POSTed draft (0: none, not JSON, or no tokenizer yet); a draft over a message's
    most (the socket's 1 MB) is counted up to it."""
    if request.method != "POST":
        return 0
    try:
        draft = (await request.json()).get("draft")
    except (ValueError, AttributeError):
        return 0
    if not isinstance(draft, str) or not draft.strip():
        return 0
    return await engine.count_tokens(draft[:MOST_DRAFT_CHARS]) or 0


def serve_context(engine) -> None:
    put_first("chat context", context_route(engine))
