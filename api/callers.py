"""Who sends an API request, decided before anything else is read: the operator (CHAT_API_KEY), a user by their own
key (history/keys.py), or the person at this machine.

- **A user's key** (`chat-...`) makes the request that user's everywhere: their library in the `library` field,
  their share of the engine, their usage. `check` answers engine/who.py's `Who`, which the gate makes the request's
  (its ticket's caller: engine/who.py's `serving`), as a chat's is its signed-in user.
- **The operator's key** works as it always has: the whole API, no user's (its usage counts to the operator), or
  the local user's when sent from this machine to a loopback server.
- **No key** is enough only where it always was: a server on loopback without CHAT_API_KEY, asked from this
  machine itself (not through a proxy: web/guard.py's rule), where the request is the local user's.
Everything else is a 401 in the OpenAI API's error JSON, saying what to send. A wrong, revoked or malformed key is
counted as a failed sign-in is (web/guard.py's `FailedSignIns`): after `MAX_KEY_FAILURES` within a minute from one
address, every key from that address gets a 429 with Retry-After until the oldest failure ages out, so keys cannot
be tried at the server's full speed. /metrics stays the operator's: a user's key does not open it.
"""

import hmac

from engine.who import THE_LOCAL_USER, THE_OPERATOR, Who
from history.keys import KeyCheck, looks_like_key
from web.guard import MAX_ADDRESS_FAILURES, FailedSignIns, from_this_machine

MAX_KEY_FAILURES = MAX_ADDRESS_FAILURES  # as many as sign-ins of any names from one address
NO_USER_KEYS = ("This server keeps no users' keys: they live in the chat history, which CHAT_HISTORY=false turns "
                "off. Send the server's CHAT_API_KEY instead.")


class Refusal(Exception):
    """A request refused before it is read: its status, what to tell the client, and when to try again."""

    def __init__(self, status: int, message: str, kind: str, retry_after: int | None = None):
        super().__init__(message)
        self.status, self.message, self.kind, self.retry_after = status, message, kind, retry_after


class Callers:
    """The key check of one app process. `loopback`: the server listens on loopback only."""

    def __init__(self, settings, loopback: bool):
        key = settings.api_key
        self.operator_key = None if key is None else f"Bearer {key.get_secret_value()}".encode()
        self.loopback = loopback
        self.keys: KeyCheck | None = None  # the users' keys, once the history is installed
        self.failed = FailedSignIns()

    def use_keys(self, layer) -> None:
        self.keys = None if layer is None else KeyCheck(layer)

    def local(self, scope) -> bool:
        """Whether a request without a key is the local user's (the API as it was on loopback)."""
        return self.operator_key is None and self.loopback and from_this_machine(scope)

    async def check(self, scope) -> Who:
        """Who sends the request: the user its key names, the local user, or the operator. Raises Refusal."""
        header = dict(scope.get("headers") or []).get(b"authorization", b"")
        if self.operator_key is not None and hmac.compare_digest(header, self.operator_key):
            return THE_LOCAL_USER if self.loopback and from_this_machine(scope) else THE_OPERATOR
        token = header[7:].strip().decode("latin-1") if header[:7].lower() == b"bearer " else ""
        if not looks_like_key(token) and self.local(scope):
            return THE_LOCAL_USER  # on loopback any key, or none, was always the local user's
        if not looks_like_key(token):
            if header:
                self._throttled(scope)
                self._failed(scope)
            raise Refusal(401, "Missing or wrong API key: send your own key (the chat's **Keys** command makes one) "
                               "or the server's CHAT_API_KEY as 'Authorization: Bearer <key>'.", "AuthenticationError")
        if self.keys is None:
            raise Refusal(401, NO_USER_KEYS, "AuthenticationError")
        user = await self.keys.user_of(token)  # a right key is never slowed: 256 random bits are not guessed
        if user is None:
            self._throttled(scope)  # wrong or revoked keys from this address, past the limit: slowed
            self._failed(scope)
            raise Refusal(401, "This API key is wrong, revoked or malformed: make a new one with the chat's **Keys** "
                               "command and send it as 'Authorization: Bearer <key>'.", "AuthenticationError")
        return Who(user)

    def operator(self, scope) -> None:
        """/metrics: the operator's key, or no key where the API needs none (the local user). Raises Refusal."""
        header = dict(scope.get("headers") or []).get(b"authorization", b"")
        if self.local(scope) or (self.operator_key is not None and hmac.compare_digest(header, self.operator_key)):
            return
        raise Refusal(401, "Missing or wrong API key: /metrics takes the server's CHAT_API_KEY as 'Authorization: "
                           "Bearer <key>' (a user's own key does not open it).", "AuthenticationError")

    def _limits(self, scope) -> dict:
        return {("api key", (scope.get("client") or ("?",))[0]): MAX_KEY_FAILURES}

    def _throttled(self, scope) -> None:
        wait = self.failed.wait_s(self._limits(scope))
        if wait > 0:
            raise Refusal(429, f"Too many wrong API keys from your address; try again in {int(wait) + 1} s.",
                          "RateLimitError", retry_after=int(wait) + 1)

    def _failed(self, scope) -> None:
        self.failed.add(list(self._limits(scope)))
