"""Who used how many tokens: prompt, cached and reply tokens per user, day (UTC) and source (chat or API), kept in
the history's database (the `chat_usage` table, history/schema.py) and read for the Usage command (ui/usage.py).

Counted where the engine's admission releases a request (engine/admission.py's `usage_sink`, set by boot/wiring.py), so
chats and API requests, finished or stopped, count the same way. Nothing is written on a request's path: counts
gather in memory and are added to the table once a second in one transaction (`FLUSH_S`), as increments, so any
number of app processes on one database add up; a process killed outright loses at most its last second, and
one that is stopped (SIGTERM, Ctrl-C) nothing: the app's shutdown writes what is pending (`write_pending`).
"""

import asyncio
import logging
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from engine.admission import API, CHAT, WARMUP
from lifetime.tasks import spawn

log = logging.getLogger("history")
FLUSH_S = 1.0
OPERATOR = "(CHAT_API_KEY)"  # what the operator's key counts as: it names no user
FIELDS = ("requests", "prompt_tokens", "cached_tokens", "reply_tokens")

_ADD = ('INSERT INTO chat_usage ("user_identifier", "day", "source", "requests", "prompt_tokens", "cached_tokens", '
        '"reply_tokens") VALUES (:user, :day, :source, :requests, :prompt_tokens, :cached_tokens, :reply_tokens) '
        'ON CONFLICT ("user_identifier", "day", "source") DO UPDATE SET '
        '"requests" = chat_usage."requests" + EXCLUDED."requests", '
        '"prompt_tokens" = chat_usage."prompt_tokens" + EXCLUDED."prompt_tokens", '
        '"cached_tokens" = chat_usage."cached_tokens" + EXCLUDED."cached_tokens", '
        '"reply_tokens" = chat_usage."reply_tokens" + EXCLUDED."reply_tokens"')
_READ = ('SELECT "user_identifier" AS "user", "day", "source", "requests", "prompt_tokens", "cached_tokens", '
         '"reply_tokens" FROM chat_usage WHERE "day" >= :since {who}ORDER BY "day" DESC, "user_identifier", "source"')


@dataclass
class Row:
    user: str
    day: str
    source: str
    requests: int
    prompt_tokens: int
    cached_tokens: int
    reply_tokens: int


def today() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d")


class UsageBook:
    """The counts of this process not yet in the database, and their writer."""

    def __init__(self, layer):
        self.layer = layer
        self.pending: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
        self._writing: asyncio.Task | None = None
        self._flushing = False  # the write task is past its wait, writing

    def count(self, ticket) -> None:
        """The admission's sink: a released request's tokens, counted to its user (the operator's key to
        OPERATOR). Runs on the event loop; the write follows within a second."""
        if ticket.kind not in (CHAT, API) or ticket.who == WARMUP or not ticket.sequences or not ticket.prompt:
            return  # the engine's own warm-up, /v1/models, and requests refused before the model read them
        who = OPERATOR if ticket.who == API else ticket.who
        counts = self.pending[(who, today(), ticket.kind)]
        for index, value in enumerate((1, ticket.prompt, ticket.cached, ticket.reply)):
            counts[index] += value
        if self._writing is None or self._writing.done():
            self._writing = spawn(self._write_soon())

    async def _write_soon(self) -> None:
        await asyncio.sleep(FLUSH_S)  # what comes meanwhile goes in the same transaction
        self._flushing = True
        try:
            await self.flush()
        finally:
            self._flushing = False

    async def close(self) -> None:
        """Write everything now (the app is ending): a write under way is awaited, one still waiting replaced."""
        if self._writing is not None and not self._writing.done():
            if self._flushing:
                await self._writing
            else:
                self._writing.cancel()
        await self.flush()

    async def flush(self) -> None:
        """Add the pending counts to the table; on a failure they stay pending for the next write."""
        pending, self.pending = self.pending, defaultdict(lambda: [0, 0, 0, 0])
        if not pending:
            return
        statements = [(_ADD, {"user": user, "day": day, "source": source, **dict(zip(FIELDS, counts))})
                      for (user, day, source), counts in pending.items()]
        try:
            await self.layer.execute_all(statements)
        except Exception as error:  # the database is away: keep the counts, try again with the next ones
            log.warning("usage could not be written (%s); kept for the next write", type(error).__name__)
            for key, counts in pending.items():
                self.pending[key] = [a + b for a, b in zip(self.pending[key], counts)]


_book: UsageBook | None = None  # this process's, once the history is installed


def open_book(layer) -> UsageBook:
    """This process's book on `layer` (a `-w` reload opens a new one; the old one writes what it holds)."""
    global _book
    _book = UsageBook(layer)
    return _book


async def write_pending() -> None:
    """At the app's end: what this process counted and has not written yet, now."""
    if _book is not None:
        await _book.close()


async def read(layer, user: str | None, days: int) -> list[Row]:
    """The last `days` days of usage (today included), of `user` or of everyone (None), newest first."""
    since = (datetime.now(timezone.utc) - timedelta(days=days - 1)).strftime("%Y-%m-%d")
    query = _READ.format(who='AND "user_identifier" = :user ' if user is not None else "")
    rows = await layer.execute_sql(query, {"since": since, **({"user": user} if user is not None else {})})
    return [Row(**row) for row in rows] if isinstance(rows, list) else []
