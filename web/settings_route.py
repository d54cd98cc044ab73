"""POST /settings/reset: the settings panel's Reset, from public/settings-reset.js, applied to the page's own chat
(ui/settings_reset.py). The chat is the one of the page's session cookie, and only for the user signed in on that
request (Chainlit's `get_current_user`, checked each time by web/users.py): another user's session id finds
nothing. A `-w` reload replaces the route rather than adding a second one.
"""

from chainlit_door.sessions import enter, session_of_id
from fastapi import Depends, Request
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute

from ui import settings_reset
from web.routes import put_first

PATH = "/settings/reset"
SESSION_COOKIE = "X-Chainlit-Session-id"  # set by Chainlit's page before it opens its socket


def reset_route(engine, layer) -> APIRoute:
    from chainlit_door.server import request_user

    async def reset(request: Request, user=Depends(request_user())) -> JSONResponse:
        session = session_of_id(request.cookies.get(SESSION_COOKIE))
        owner = getattr(getattr(session, "user", None), "identifier", None)
        if session is None or owner != getattr(user, "identifier", None):
            return JSONResponse({"detail": "No open chat of yours to reset: reload the page."}, status_code=404)
        enter(session)
        await settings_reset.to_defaults(engine, layer)
        return JSONResponse({"reset": True})

    return APIRoute(PATH, reset, methods=["POST"], include_in_schema=False)


def serve_reset(engine, layer) -> None:
    put_first("settings reset", reset_route(engine, layer))
