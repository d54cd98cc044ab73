"""GET /chat/context: how much of the running preset's context the page's chat takes, for the line by the message
box (public/context-line.js; ui/context_fill.py counts it). The chat is the one of the page's session cookie, and
only for the user signed in on that request; {"line": null} before the chat has a reply or the engine a context.
"""

from chainlit_door.sessions import session_of_id
from fastapi import Depends, Request
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute

from ui import chat_state, context_fill
from web.routes import put_first
from web.settings_route import SESSION_COOKIE

PATH = "/chat/context"


def context_route(engine) -> APIRoute:
    from chainlit_door.server import request_user

    async def context(request: Request, user=Depends(request_user())) -> JSONResponse:
        session = session_of_id(request.cookies.get(SESSION_COOKIE))
        owner = getattr(getattr(session, "user", None), "identifier", None)
        chat = chat_state.made(session) if session is not None and owner == getattr(user, "identifier", None) \
            else None
        said = None if chat is None or not chat.context_used else context_fill.line(
            chat.context_used, engine.max_model_len, chat.prefs.sampling.max_tokens,
            request.headers.get("accept-language", "")[:2])
        return JSONResponse({"line": said and said[0], "full": bool(said and said[1])},
                            headers={"Cache-Control": "no-store"})

    return APIRoute(PATH, context, methods=["GET"], include_in_schema=False)


def serve_context(engine) -> None:
    put_first("chat context", context_route(engine))
