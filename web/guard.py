"""Who may talk to this server at all: the Host it was called by, the page that calls it, and whether a proxy
stands between, checked before any route runs (the chat, the socket, /v1 and /metrics alike).

On loopback nobody signs in (web/signin.py), so "this request comes from a person at this machine" must be true:
- **Host**: a page on another site whose name was rebound to 127.0.0.1 (DNS rebinding) calls us by its own name.
  Only loopback names, and those in CHAT_ALLOWED_HOSTS, are answered (403 otherwise).
- **Origin**: a page of another site, open in the user's own browser, may send requests (and a socket) with
  the user's cookies. Only the app's own origin and those in CHAT_ALLOWED_ORIGINS are answered; only the latter
  get CORS headers (the same origin needs none).
- **Proxies**: a request carrying forwarding headers was sent by someone elsewhere through a reverse proxy on
  this machine: it never gets the local user (the sign-in asks for a password) nor the API without its key.
Password sign-ins are also slowed here, so that guessing is slow but someone else's guesses never lock a user out:
after `MAX_FAILURES` failures within `FAILURE_WINDOW_S` for one user name *from one address*, or
`MAX_ADDRESS_FAILURES` for any names from one address, /login answers that address 429 with Retry-After until the
oldest failure ages out; the real user, signing in from their own address, is not slowed by guesses at their
name from elsewhere. The address is the connection's as uvicorn gives it: it believes `X-Forwarded-For` only from
the proxies it trusts (FORWARDED_ALLOW_IPS, by default this machine's own, where the reverse proxy of a loopback
server runs; that proxy appends the address it saw), so a sender elsewhere cannot pick a fresh address per guess
by forging the header. A sender on this machine could, but there it is the local user already. An upload
larger than an attachment may be is refused here too (413): Chainlit reads a whole file into memory before it
checks its size.
"""

import json
import time
from collections import defaultdict, deque
from urllib.parse import parse_qs, urlsplit

from web.asgi import read_body, replay
from web.listen import is_loopback

FORWARDING_HEADERS = (b"x-forwarded-for", b"forwarded", b"x-real-ip")
MAX_FAILURES = 5  # for one user name from one address: a person mistyping their own password a few times
MAX_ADDRESS_FAILURES = 20  # from one address, whatever the names: one sender trying many names
FAILURE_WINDOW_S = 60.0
MAX_LOGIN_BODY = 64 * 1024
LOGIN_PATH = "/login"
UPLOAD_PATH = "/project/file"  # Chainlit's upload route: a body over the attachments' limit never reaches it
UPLOAD_OVERHEAD = 64 * 1024  # room for the multipart form's headers around the file
HEADER_SIGNIN_PATH = "/auth/header"  # the local user's sign-in: never through a proxy
PROXY_SIGNIN = ("This request came through a proxy, so it does not sign in as this machine's user: sign in with a "
                "user name and password (the server's owner adds users with `python scripts/add_user.py NAME`).")


def forwarded(headers: dict) -> bool:
    """Whether a proxy says it passed this request on (`headers`: lower-case byte names, as ASGI has them)."""
    return any(name in headers for name in FORWARDING_HEADERS)


def from_this_machine(scope) -> bool:
    """Whether an ASGI request may be the local user's: no proxy says it passed it on, and it came in over
    loopback (as every request to a loopback server does unless uvicorn took a forwarded address for it)."""
    client = (scope.get("client") or ("",))[0]
    return not forwarded(dict(scope.get("headers") or [])) and is_loopback(client)


def host_name(host: str) -> str:
    """'Name:port' or '[v6]:port' -> the bare lower-case name."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class FailedSignIns:
    """Recent failed password sign-ins per key (a user name at an address, or an address), each key with its
    limit."""

    def __init__(self, now=time.monotonic):
        self.now = now
        self.failures: dict[str, deque] = defaultdict(deque)

    def wait_s(self, limits: dict) -> float:
        """0 when each key may try again, else the seconds until all may (`limits`: failures allowed per key)."""
        self._forget_old()
        wait = 0.0
        for key, most in limits.items():
            times = self.failures.get(key, ())
            if len(times) >= most:
                wait = max(wait, times[0] + FAILURE_WINDOW_S - self.now())
        return wait

    def add(self, keys) -> float:
        """Count a failure for each key; returns its time, for `undo`."""
        stamp = self.now()
        for key in keys:
            self.failures[key].append(stamp)
        return stamp

    def undo(self, keys, stamp: float) -> None:
        for key in keys:
            if stamp in self.failures.get(key, ()):
                self.failures[key].remove(stamp)

    def _forget_old(self) -> None:
        """Failures older than the window count no more; keys without any go, so they cannot pile up."""
        cutoff = self.now() - FAILURE_WINDOW_S
        for key in list(self.failures):
            times = self.failures[key]
            while times and times[0] <= cutoff:
                times.popleft()
            if not times:
                del self.failures[key]


class Guard:
    """ASGI middleware over Chainlit's whole app. `loopback`: the server listens on loopback only (Host names are
    then checked); `signin`: a sign-in exists for requests through a proxy; `api_paths`: /v1 and /metrics."""

    def __init__(self, app, *, loopback: bool, signin: bool, api_keyed: bool, api_paths, allowed_hosts=(),
                 allowed_origins=()):
        self.app, self.loopback, self.signin, self.api_keyed = app, loopback, signin, api_keyed
        self.api_paths = frozenset(api_paths)
        self.allowed_hosts = {name.lower() for name in allowed_hosts}
        self.allowed_origins = {origin.lower().rstrip("/") for origin in allowed_origins}
        self.failed = FailedSignIns()

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        problem = self._refusal(scope, headers)
        if problem is not None:
            return await _refuse(scope, receive, send, 401 if problem is PROXY_SIGNIN else 403, problem)
        if scope["type"] == "http" and scope["path"] == LOGIN_PATH and scope["method"] == "POST":
            return await self._login(scope, receive, send)
        if scope["type"] == "http" and scope["path"] == UPLOAD_PATH and not _upload_fits(headers):
            return await _refuse(scope, receive, send, 413, f"This upload is over the {_upload_limit_mb()} MB an "
                                 "attachment may be (or does not say its length): attach a smaller file.")
        await self.app(scope, receive, send)

    def _refusal(self, scope, headers: dict) -> str | None:
        host = headers.get(b"host", b"").decode("latin-1")
        name = host_name(host)
        if (self.loopback or self.allowed_hosts) and not self._host_allowed(name):
            return (f"This server answers only to the names of this machine, not to '{name or 'no host'}'. To reach "
                    "it by that name, add it to CHAT_ALLOWED_HOSTS in .env.")
        origin = headers.get(b"origin")
        if origin is not None and not self._origin_allowed(origin.decode("latin-1"), host):
            return (f"Requests from other web pages ({origin.decode('latin-1')}) are refused. To let that page "
                    "use this server, add its origin to CHAT_ALLOWED_ORIGINS in .env.")
        if self.loopback and forwarded(headers):
            if not self.signin:
                return ("This request came through a proxy, so its sender must sign in, and the sign-in keeps its "
                        "users in the history, which CHAT_HISTORY=false turns off. Remove CHAT_HISTORY=false.")
            if scope["path"] == HEADER_SIGNIN_PATH:
                return PROXY_SIGNIN
            if scope["path"].rstrip("/") in self.api_paths and not self.api_keyed:
                return ("This API request came through a proxy, so it needs a key, and this server keeps none: "
                        "set CHAT_API_KEY in .env (or keep the history on for users' own keys) and send it as "
                        "'Authorization: Bearer <key>'.")
        return None

    def _host_allowed(self, name: str) -> bool:
        return "*" in self.allowed_hosts or name in self.allowed_hosts or (self.loopback and is_loopback(name))

    def _origin_allowed(self, origin: str, host: str) -> bool:
        origin = origin.lower().rstrip("/")
        if origin in self.allowed_origins or "*" in self.allowed_origins:
            return True
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and bool(host) and parts.netloc == host.lower()

    async def _login(self, scope, receive, send):
        """A password sign-in, refused for a while after too many failures of its user name from its address, or
        of its address."""
        body = await read_body(receive, MAX_LOGIN_BODY)
        if body is None:
            return await _refuse(scope, receive, send, 413, "The sign-in form is too large.")
        user = (parse_qs(body.decode("latin-1")).get("username") or [""])[0].strip().lower()
        address = (scope.get("client") or ("?",))[0]  # uvicorn's: a forwarded one only from a trusted proxy
        limits = {("name at address", user, address): MAX_FAILURES, ("address", address): MAX_ADDRESS_FAILURES}
        keys = list(limits)
        wait = self.failed.wait_s(limits)
        if wait > 0:
            return await _refuse(scope, receive, send, 429, f"Too many failed sign-ins from your address; try again "
                                 f"in {int(wait) + 1} s.", retry_after=int(wait) + 1)
        stamp = self.failed.add(keys)  # counted from the start: guesses sent all at once are slowed too
        status = {}

        async def watched(message):
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, replay(body, receive), watched)
        finally:
            if status.get("code") not in (401, 403):
                self.failed.undo(keys, stamp)


def _upload_limit_mb() -> int:
    from chainlit_door.server import config

    return config().features.spontaneous_file_upload.max_size_mb


def _upload_fits(headers: dict) -> bool:
    """Whether an upload says how long it is (a browser's always does) and is no longer than the limit allows."""
    length = headers.get(b"content-length", b"")
    return length.isdigit() and int(length) <= _upload_limit_mb() * 2**20 + UPLOAD_OVERHEAD


async def _refuse(scope, receive, send, status: int, reason: str, retry_after: int | None = None) -> None:
    """A one-line reason as JSON (`detail`, as Chainlit's own errors), or a socket closed before it opens."""
    if scope["type"] == "websocket":
        await receive()  # the connect event
        return await send({"type": "websocket.close", "code": 1008, "reason": reason[:120]})
    body = json.dumps({"detail": reason}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class GuardNotInstalled(RuntimeError):
    """Chainlit's app already serves without the guard."""


def is_guard(cls) -> bool:
    """Whether a middleware class is this module's Guard, also as a `-w` reload imported it again."""
    return getattr(cls, "__qualname__", None) == Guard.__qualname__ and getattr(cls, "__module__", None) == __name__


def install(*, loopback: bool, signin: bool, settings, api_paths) -> None:
    """Put the guard in front of Chainlit's app, and its CORS for CHAT_ALLOWED_ORIGINS only, once per process
    (a `-w` reload finds the app already serving with them). Raises GuardNotInstalled where Chainlit's app
    already serves without the guard (Starlette builds its middleware at the first request and never again):
    the app must not start unguarded."""
    from chainlit_door.server import web_app

    app = web_app()
    from starlette.middleware import Middleware
    from starlette.middleware.cors import CORSMiddleware

    if app.middleware_stack is not None:
        if not any(is_guard(entry.cls) for entry in app.user_middleware):
            raise GuardNotInstalled(
                "Chainlit's server was already answering requests before the app could put its guard in front of it, "
                "so the sign-in and the host checks would not apply. Start the app with `chainlit run app.py` "
                "(it loads the app before it serves), and report this with your Chainlit version if it persists.")
        return
    origins = settings.allowed_origin_list
    app.user_middleware[:] = [entry for entry in app.user_middleware if entry.cls is not CORSMiddleware]
    app.user_middleware.insert(0, Middleware(CORSMiddleware, allow_origins=list(origins), allow_credentials=True,
                                             allow_methods=["*"], allow_headers=["*"]))
    app.user_middleware.insert(0, Middleware(Guard, loopback=loopback, signin=signin,
                                             api_keyed=settings.api_key is not None or settings.history,
                                             api_paths=api_paths,
                                             allowed_hosts=settings.allowed_host_list, allowed_origins=origins))
