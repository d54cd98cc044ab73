"""What the app does with Chainlit's server through chainlit_door/server.py (web/ edits the server's routes and
settings, history/layer.py extends the data layer), checked against the Chainlit installed
(fast; no server): each test fails, naming the touch, when an upgrade moves what it relies on, or makes it
unneeded. tests/test_chainlit_patches.py does the same for the door's patches and sessions; test_guard.py for the guard.
"""

import inspect

import chainlit.server
import chainlit.socket
from chainlit.config import config
from chainlit.data.sql_alchemy import SQLAlchemyDataLayer


def test_the_api_routes_go_before_chainlits_catch_all_page_route():
    """api/route.py puts /v1 and /metrics first in the router: Chainlit answers every other path with its page."""
    paths = [getattr(route, "path", "") for route in chainlit.server.app.router.routes]
    assert "/{full_path:path}" in paths, ("Chainlit no longer has a catch-all page route: api/route.py need "
                                          "not put the API's routes first")
    assert isinstance(chainlit.server.app.router.routes, list), "web/routes.py edits the router's list in place"


def test_the_sign_in_turns_the_local_users_header_auth_off_where_chainlit_reads_it():
    """web/signin.py sets `config.code.header_auth_callback` to None off loopback: Chainlit's header route reads it."""
    assert "header_auth_callback" in type(config.code).model_fields
    assert "if not config.code.header_auth_callback" in inspect.getsource(chainlit.server), (
        "Chainlit's header sign-in no longer reads config.code.header_auth_callback: web/signin.py must turn the "
        "local user off another way")


def test_a_closed_tabs_chat_is_kept_chainlits_session_timeout_which_the_history_shortens():
    """history/layer.py cuts `config.project.session_timeout` (Chainlit keeps a closed tab's session an hour) to
    SESSION_KEPT_S once the chats are in the database."""
    from history.layer import SESSION_KEPT_S

    assert "await asyncio.sleep(config.project.session_timeout)" in inspect.getsource(chainlit.socket), (
        "Chainlit no longer keeps a closed tab's session for config.project.session_timeout")
    import re

    import chainlit.config as module

    written = int(re.search(r"session_timeout = (\d+)", module.DEFAULT_CONFIG_STR).group(1))
    assert written > SESSION_KEPT_S, "Chainlit's own default is short now: history/layer.py need not shorten it"


def test_the_history_layer_uses_the_data_layers_connection_and_result_cleaning():
    """history/layer.py reads `_conninfo` (which database), runs PostgreSQL's queries on Chainlit's `engine` and
    returns rows through `clean_result`, as Chainlit's own `execute_sql` does."""
    init = inspect.getsource(SQLAlchemyDataLayer.__init__)
    assert "self._conninfo = conninfo" in init and "self.engine" in init, "the data layer's connection moved"
    assert callable(getattr(SQLAlchemyDataLayer, "clean_result", None)), "the data layer's clean_result is gone"
    assert "self.clean_result(" in inspect.getsource(SQLAlchemyDataLayer.execute_sql)
