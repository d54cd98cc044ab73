"""Who is asking: one answer for a chat and an API request alike, with one spelling of each kind of user.

- **A signed-in user** (a login, web/signin.py) chats as their name; an API request with their own key
  (api/callers.py) is theirs too: their share of the engine, their usage, their library, their keys.
- **The local user** (`LOCAL`) is the person at this machine of a loopback server, where nobody signs in: a chat
  signed in by the local provider (web/signin.py), or an API request from this machine without a key.
- **The operator's key** (`OPERATOR`): an API request with CHAT_API_KEY, no user's.

A role never comes from a name: `owner` says the person came in as this machine's owner (the local provider, or
the operator's key), and operators are those owners and the users named in CHAT_ADMINS (`is_operator`). The
reserved names are no user's: no login may take them (`RESERVED_NAMES`).

`asking()` gives the user of the task that runs: an API request's, the caller on the ticket the gate serves it with
(`serving`), else the open chat's, found by what ui/ installed (`find_chats_user_with`: Chainlit lives above the
engine).
"""

import contextlib
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass

LOCAL = "local"  # the person at this machine of a loopback server, where nobody signs in
OPERATOR = "api"  # an API request with the operator's key (CHAT_API_KEY): no user's
# Names no login may take (web/signin.py, scripts/add_user.py): the two above, and how the usage table once named
# the operator's key
RESERVED_NAMES = (LOCAL, OPERATOR, "(CHAT_API_KEY)")


@dataclass(frozen=True)
class Who:
    name: str  # whose share, usage, library, keys and defaults
    owner: bool = False  # came in as this machine's owner (the local provider) or with the operator's key

    def is_operator(self, admins: list[str]) -> bool:
        """Sees everyone's usage: an owner, or a signed-in user named in CHAT_ADMINS."""
        return self.owner or (self.name not in RESERVED_NAMES and self.name in admins)


THE_LOCAL_USER = Who(LOCAL, owner=True)
THE_OPERATOR = Who(OPERATOR, owner=True)

# The one context variable of a request: the admission's ticket of the API request this task serves
# (engine/admission.py), which carries its caller, its priority and the tokens it used
_SERVING: ContextVar = ContextVar("serving", default=None)
_chats_user: list[Callable[[], Who] | None] = [None]  # set once per process by ui/who.py


def find_chats_user_with(find: Callable[[], Who]) -> None:
    """How `asking()` finds an open chat's user (ui/who.py: from Chainlit's session)."""
    _chats_user[0] = find


@contextlib.contextmanager
def serving(ticket):
    """This block (and the tasks it starts) serves the request admitted with `ticket` (api/gate.py): `asking()` is
    its caller, and vLLM's client reads its priority and notes its tokens on it (engine/openai_app.py)."""
    token = _SERVING.set(ticket)
    try:
        yield ticket
    finally:
        _SERVING.reset(token)


def served():
    """The ticket of the request this task serves (`serving`), or None."""
    return _SERVING.get()


def asking() -> Who:
    """The user of this task: an API request's, else the open chat's. Raises LookupError in a task that serves
    neither (nobody is guessed: a guess could grant a role)."""
    ticket = _SERVING.get()
    who = getattr(ticket, "caller", None)
    if who is None and _chats_user[0] is not None:
        who = _chats_user[0]()
    if who is None:
        raise LookupError("no chat or API request is being served here: nobody is asking")
    return who
