"""GET /engine/start: the engine's start as one line, for the page to show before anything is sent
(public/start-line.js; ui/start_line.py makes the line). Answers {"state": ..., "line": ... or null} in the
language the browser asks for, to a signed-in user (Chainlit's own `get_current_user`, as web/users.py checks
it); the line is null once the engine is ready, asleep or failed (the chat says a failure). A `-w` reload replaces
the route rather than adding a second one.
"""

from fastapi import Depends, Request
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute

from ui import start_line
from web.routes import put_first

PATH = "/engine/start"


def start_route(engine) -> APIRoute:
    from chainlit_door.server import request_user

    async def start(request: Request, user=Depends(request_user())) -> JSONResponse:
        state = engine.state
        said = start_line.line(state, request.headers.get("accept-language", "")[:2])
        return JSONResponse({"state": state, "line": said}, headers={"Cache-Control": "no-store"})

    route = APIRoute(PATH, start, methods=["GET"], include_in_schema=False)
    return route


def serve_start(engine) -> None:
    """Put the route on Chainlit's server, in place of one an earlier load put there."""
    put_first("start line", start_route(engine))
