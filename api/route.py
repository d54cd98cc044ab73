"""Serving the OpenAI-compatible API from Chainlit's own web server, and refusing to serve it unguarded.

The API's paths are routed to the gate (api/gate.py) ahead of Chainlit's catch-all page route,
so API clients, the chat and the browser share one port, one process and one engine; `/metrics` serves
the engine's Prometheus metrics beside them, behind the operator's key. Off loopback the API takes only keys:
users' own keys (kept in the history; api/callers.py) or `CHAT_API_KEY`, so the app does not start there with
neither: an open API would let anyone on the network use the GPU.
"""

import sys

from starlette.routing import BaseRoute, Match, NoMatchFound

from api.gate import metrics_app, shared_gate
from engine.openai_app import SERVED_PATHS
from web.listen import chosen_port, is_loopback
from web.routes import put_first

METRICS_PATH = "/metrics"
GUARDED_PATHS = SERVED_PATHS | {METRICS_PATH}  # what a request through a proxy may use only with the API's key

KEY_HOWTO = ("Keep the chat history on (users then make their own keys with the chat's Keys command), or set "
             'CHAT_API_KEY in .env (make one with: python -c "import secrets; print(secrets.token_urlsafe(32))") '
             "and give it to the API's clients, or turn the API off with CHAT_API=false.")


class ApiRoute(BaseRoute):
    """Matches `paths` exactly, whatever the method, and hands the request on untouched."""

    def __init__(self, app, paths=SERVED_PATHS):
        self.app = app
        self.paths = paths

    def matches(self, scope):
        if scope["type"] == "http" and scope["path"].rstrip("/") in self.paths:
            return Match.FULL, {}
        return Match.NONE, {}

    def url_path_for(self, name, /, **path_params):
        raise NoMatchFound(name, path_params)

    async def handle(self, scope, receive, send):
        await self.app(scope, receive, send)


def serve_api(gate, metrics) -> None:
    """Route the API to `gate` (and /metrics to `metrics`) on Chainlit's server; a `-w` reload replaces the
    routes, never adds second ones."""
    put_first("api", ApiRoute(metrics, frozenset({METRICS_PATH})), ApiRoute(gate))


def open_api(engine) -> None:
    """Serve the API on this server (unless CHAT_API=false); off loopback only with a key."""
    if not engine.serves_api:  # a remote vLLM server serves its own API
        return
    host, _ = chosen_port()
    exit_if_api_unguarded(host, engine.settings)
    if engine.settings.api:
        serve_api(shared_gate(engine), metrics_app(engine))


def open_library(engine, layer) -> None:
    """Let the API check users' keys in the history, and its `library` field read the library of whoever asks
    (api/callers.py: a key's user, or this machine's own user on loopback, from this machine only; api/library_field.py
    says why)."""
    if engine.serves_api and engine.settings.api:
        shared_gate(engine).use_library(layer)


def exit_if_api_unguarded(host: str, settings) -> None:
    if settings.api and settings.api_key is None and not settings.history and not is_loopback(host):
        print(f"ERNIE Chat cannot start: it listens on {host}, so its OpenAI-compatible API (/v1) would be open "
              f"to the network without a key. {KEY_HOWTO}", file=sys.stderr)
        raise SystemExit(1)
