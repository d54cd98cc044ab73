"""Chainlit's server from the outside: its web app (routes and middleware are added to it), its loaded config, its
data layer, who a web request is signed in as, and the base class the history extends.

Each is imported from Chainlit here alone, when first asked for (importing `chainlit.server` builds Chainlit's web
app, which app.py must not do before the engine's modules are pinned), so the rest of the app names what it needs,
not where Chainlit keeps it. tests/test_chainlit_doors.py checks what each relies on against the Chainlit installed.
"""


def web_app():
    """Chainlit's FastAPI app: the server the page, the API and every route of the app's own are served by."""
    from chainlit.server import app

    return app


def config():
    """Chainlit's loaded config (.chainlit/config.toml and the hooks the app registered)."""
    from chainlit.config import config as loaded

    return loaded


def app_root() -> str:
    """The folder Chainlit runs from (its `.chainlit/` and `.files/` live there)."""
    import chainlit.config

    return chainlit.config.APP_ROOT


def data_layer():
    """The chat history's data layer Chainlit uses (history/layer.py's), or None where the history is off."""
    from chainlit.data import get_data_layer

    return get_data_layer()


def request_user():
    """The FastAPI dependency that gives a web request's signed-in user (Chainlit's own `get_current_user`, which
    web/users.py follows with a check of the login each time), for `Depends(...)` in the app's routes."""
    from chainlit.auth import get_current_user

    return get_current_user


def data_layer_base():
    """Chainlit's SQL data layer, which history/layer.py extends."""
    from chainlit.data.sql_alchemy import SQLAlchemyDataLayer

    return SQLAlchemyDataLayer


def now_stamp() -> str:
    """A step's time stamp as Chainlit writes them."""
    from chainlit.utils import utc_now

    return utc_now()
