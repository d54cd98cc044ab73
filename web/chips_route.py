"""GET /chips: the names of the chips that act at once, in every language, for the page to press Send when one is
pressed (public/status-chip.js); ui/chips.py declares the chips. Answers {"at_once": [...]} to a signed-in user
(Chainlit's own user check, as web/start_route.py asks it). A `-w` reload replaces the route rather than adding a
second one.
"""

from fastapi import Depends
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute

from ui import chips
from web.routes import put_first

PATH = "/chips"


def chips_route() -> APIRoute:
    from chainlit_door.server import request_user

    async def at_once(user=Depends(request_user())) -> JSONResponse:
        return JSONResponse({"at_once": chips.at_once_names()})

    return APIRoute(PATH, at_once, methods=["GET"], include_in_schema=False)


def serve_chips() -> None:
    """Put the route on Chainlit's server, in place of one an earlier load put there."""
    put_first("chips", chips_route())
