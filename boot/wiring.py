"""Everything app.py needs set up before its hooks run, in the order it must happen, in one call.

The app's code goes after Chainlit's socket handlers first, the port is checked before anything slow, then the shared
engine is made and served at /v1 (api/, api/route.py), the history's database and data layer are installed
(history/), Chainlit's changes are installed in one call (chainlit_door/patches.py: they need the history to check
users), and the sign-in and the guard are chosen by where the server listens (web/). A `-w` reload runs this
again: each step either replaces what the last load put in place or
finds it already there.
"""

import sys

from chainlit_door import patches as chainlit_patches
from engine import admission
from engine.errors import SettingsError
from engine.hardware import runs_on_processor
from engine.engine import shared_engine
from history import layer as history_layer
from history import usage
from ui import chat_state, edits, reconnect, sessions, settings_first, who, words
from web import guard, signin, users
from api.route import GUARDED_PATHS, open_api, open_library
from web.library_names import serve_names
from web.chips_route import serve_chips
from web.context_route import serve_context
from web.settings_route import serve_reset
from web.start_route import serve_start
from web.listen import chosen_port, exit_if_port_taken, is_loopback


def hook_chainlit() -> None:
    """The app's own code after Chainlit's socket handlers."""
    reconnect.resend_replies_on_reconnect()  # a dropped connection that comes back gets its reply
    sessions.continue_threads_after_restarts()  # so does a restart of the server under an open tab
    settings_first.apply_settings_first()  # a message sent after a settings change is answered with the new ones
    who.install()  # engine/who.py's `asking()` finds a chat's user in its Chainlit session


def install():
    """Hook into Chainlit, make the shared engine and put the API, history, sign-in and guard around it; returns the
    engine and the history's data layer (None when the history is off)."""
    hook_chainlit()
    try:
        engine = shared_engine()  # first: it ends engine processes an earlier run left holding memory and the port
    except SettingsError as error:  # a bad value in .env or the environment: its sentence, not a traceback
        print(f"ERNIE Chat cannot start: {error}", file=sys.stderr)
        raise SystemExit(1) from None
    edits.handle_edits(lambda: chat_state.current(engine))  # an edit changes the chat once the engine takes it
    words.on_processor(runs_on_processor(engine.settings))  # Chinese says 内存, not a GPU's 显存, on a CPU
    exit_if_port_taken()
    open_api(engine)  # the OpenAI-compatible API at /v1, on the same engine
    layer = history_layer.install(engine.settings)  # None: off
    if layer is not None:
        layer.on_delete = lambda thread_id: sessions.end_deleted(thread_id, engine.abort, chat_state.forget)
        admission.usage_sink = usage.open_book(layer).count  # each released request's tokens, to its user
    loopback = is_loopback(chosen_port()[0])
    open_library(engine, layer)  # the API's `library` field
    serve_names(layer)  # the names the message box offers after an @
    serve_start(engine)  # the engine's start as a line by the message box, before anything is sent
    serve_reset(engine, layer)  # the settings panel's Reset brings the defaults back
    serve_context(engine)  # how full the chat's context is, by the message box
    serve_chips()  # which chips the page sends at once when pressed
    signin.install(loopback, layer, engine.settings.history_db.parent)
    chainlit_patches.install(users.checks(layer, loopback))  # every request and message checks its user
    guard.install(loopback=loopback, signin=layer is not None, settings=engine.settings, api_paths=GUARDED_PATHS)
    return engine, layer
