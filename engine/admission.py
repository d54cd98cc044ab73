"""Who has sequences in the engine: the one count that the chats and the OpenAI API both enter through.

A chat's reply is one sequence; an API request is its prompts times its `n` (api/gate.py reads them). Every
request, from either side, holds its sequences inside `admit(who, n)` for as long as it runs, and the count
by `who` is what `saturated()`, the idle timer and the status panel read: a request with n=4 takes 4 of the
preset's slots, as 4 chats would, and no side can keep the engine awake or busy without the other seeing it.
"""

import collections
import contextlib
from collections.abc import Callable

CHAT, API = "chat", "api"


class Admission:
    def __init__(self, on_change: Callable[[], None] = lambda: None):
        self._held: collections.Counter[str] = collections.Counter()
        self._on_change = on_change  # each entry and exit is activity (the idle timer's touch)

    @contextlib.asynccontextmanager
    async def admit(self, who: str, sequences: int = 1):
        """Hold `sequences` for `who` (CHAT or API) while the block runs; released however it ends."""
        if who not in (CHAT, API) or sequences < 0:
            raise ValueError(f"cannot admit {sequences} sequences for {who!r}")
        self._held[who] += sequences
        self._on_change()
        try:
            yield
        finally:
            self._held[who] -= sequences
            self._on_change()

    def held(self, who: str | None = None) -> int:
        """Sequences in flight for `who`, or for everyone."""
        return sum(self._held.values()) if who is None else self._held[who]
