"""The names of the signed-in user's library documents, for the message box's `@` suggestions
(public/library-names.js): GET /library/names answers a JSON list of names, oldest first.

Chainlit 2.12's message box suggests only its `/` commands, so the page asks this route for the names it offers
after an `@`. The user is found as Chainlit finds them for its own REST routes (its `get_current_user`
dependency: the sign-in's access-token cookie, or a bearer token), so a request answers only its own user's names;
one without a valid sign-in gets 401. The route goes ahead of Chainlit's catch-all page route, and a `-w` reload
replaces it rather than adding a second one.
"""

from fastapi import Depends
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute

from history import library
from web.routes import put_first

PATH = "/library/names"


def names_route(layer) -> APIRoute:
    """The route, reading `layer` (the history's data layer; None: the history is off, so no library)."""
    from chainlit_door.server import request_user

    async def names(user=Depends(request_user())) -> JSONResponse:
        if user is None:  # no sign-in exists (the history is off), so nobody is known to own a library
            return JSONResponse({"detail": "Not signed in"}, status_code=401)
        documents = await library.documents(layer, user.identifier) if layer is not None else []
        found = list(dict.fromkeys(d.name for d in documents))  # the same file added twice is offered once
        return JSONResponse(found, headers={"Cache-Control": "no-store"})

    route = APIRoute(PATH, names, methods=["GET"], include_in_schema=False)
    return route


def serve_names(layer) -> None:
    """Put the route on Chainlit's server, in place of one an earlier load put there."""
    put_first("library names", names_route(layer))
