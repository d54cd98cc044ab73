"""Routes of the app's own on Chainlit's server, put ahead of its catch-all page route (which answers every other
path with the page), and replaced rather than added again by a `-w` reload: the one place that edits Chainlit's
router (the API's routes, the library's names, the engine's start line)."""


def put_first(kind: str, *routes) -> None:
    """`routes`, each marked as of `kind`, first in Chainlit's router, in place of the routes of that kind that an
    earlier load put there."""
    from chainlit_door.server import web_app

    app = web_app()

    present = app.router.routes
    present[:] = [route for route in present if getattr(route, "app_route_kind", None) != kind]
    for route in reversed(routes):
        route.app_route_kind = kind
        present.insert(0, route)
