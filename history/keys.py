"""Users' own API keys: made, listed and revoked by their owner, checked on every API request, kept in the history's
database (the `chat_api_keys` table, history/schema.py) so that every app process on it knows the same keys.

A key is `KEY_PREFIX` and 32 random bytes (256 bits, from `secrets`), shown once when it is made; the database holds
only its SHA-256. A password needs a slow, salted hash (web/signin.py's scrypt) because people choose guessable
ones; a key of 256 random bits cannot be guessed or found from its hash by any amount of hashing, so a fast
unsalted hash is as safe here and lets every request be checked with one indexed lookup instead of ~50 ms of
scrypt (which would also let anyone load the server by sending wrong keys). The lookup is made per request, with
no cache: a key revoked in one process is refused by the next request to any other.

When a key was last used is written off the request's path: `touch` notes it in memory, and a write follows at
most once a minute per key (`LAST_USED_EVERY_S`), so a busy script costs no write per request.
"""

import asyncio
import hashlib
import re
import secrets
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone

from history.words import Refusal
from lifetime.tasks import spawn

KEY_PREFIX = "chat-"  # tells a user's key from the operator's CHAT_API_KEY and from text that is no key at all
KEY_SHAPE = re.compile(r"chat-[A-Za-z0-9_-]{43}")  # the prefix and token_urlsafe(32)
MAX_NAME = 60
MAX_KEYS = 50  # per user: far more scripts than one person runs, and the list stays readable
LAST_USED_EVERY_S = 60.0

_ADD = ('INSERT INTO chat_api_keys ("id", "user_identifier", "name", "hash", "created_at") '
        'VALUES (:id, :user, :name, :hash, :created_at)')
LIST = ('SELECT "id", "name", "created_at", "last_used_at" FROM chat_api_keys WHERE "user_identifier" = :user '
         'ORDER BY "created_at", "name"')
_ADD_BELOW_LIMIT = ('INSERT INTO chat_api_keys ("id", "user_identifier", "name", "hash", "created_at") '
                    'SELECT :id, :user, :name, :hash, :created_at WHERE (SELECT COUNT(*) FROM chat_api_keys '
                    'WHERE "user_identifier" = :user) < :most')
_COUNT = 'SELECT COUNT(*) AS keys FROM chat_api_keys WHERE "user_identifier" = :user'
_FIND = 'SELECT "id", "user_identifier" FROM chat_api_keys WHERE "hash" = :hash'
REVOKE = 'DELETE FROM chat_api_keys WHERE "id" = :id AND "user_identifier" = :user'
REVOKE_ALL = 'DELETE FROM chat_api_keys WHERE "user_identifier" = :name'  # a removed user's (scripts/add_user.py)
_USED = 'UPDATE chat_api_keys SET "last_used_at" = :at WHERE "id" = :id'


class KeyRefused(Refusal):
    """A key that cannot be made; the text says why and what to do (history/words/'s `keys.` keys, in the chat's
    language by `in_language`)."""


@dataclass
class Key:
    id: str
    name: str
    created_at: str
    last_used_at: str | None


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def digest(key: str) -> str:
    """What the database keeps of a key (the module's docstring says why SHA-256 suffices)."""
    return hashlib.sha256(key.encode()).hexdigest()


def new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def looks_like_key(text: str) -> bool:
    """Whether `text` is meant as a user's key (it starts with the prefix), well formed or not."""
    return text.startswith(KEY_PREFIX)


def checked_name(name: str) -> str:
    """The key's name as kept (spaces tidied); raises KeyRefused for an empty or long one."""
    name = " ".join(name.split())
    if not name:
        raise KeyRefused("keys.no_name")
    if len(name) > MAX_NAME:
        raise KeyRefused("keys.name_too_long", most=MAX_NAME, size=len(name))
    if not name.isprintable():  # a NUL, say, which PostgreSQL's text cannot hold
        raise KeyRefused("keys.unprintable")
    return name


def add_statement(user: str, name: str) -> tuple[str, str, dict]:
    """A new key of `user`: the key itself (shown once, never stored), and the INSERT and values that store its
    hash (scripts/add_user.py runs it on its own connection)."""
    key = new_key()
    values = {"id": str(uuid.uuid4()), "user": user, "name": checked_name(name), "hash": digest(key),
              "created_at": _now()}
    return key, _ADD, values


async def make(layer, user: str, name: str) -> str:
    """Make a key for `user`; returns the key (shown once). Raises KeyRefused, or the database's error (no key is
    shown that was not kept). The count and the insert are one statement, so tabs pressing New at once cannot
    pass the limit together (SQLite runs it on its one writer)."""
    key, _, values = add_statement(user, name)
    await layer.execute_all([(_ADD_BELOW_LIMIT, {**values, "most": MAX_KEYS})])
    if not await layer.execute_sql(_FIND, {"hash": values["hash"]}):
        count = await layer.execute_sql(_COUNT, {"user": user})
        if isinstance(count, list) and count and count[0]["keys"] >= MAX_KEYS:
            raise KeyRefused("keys.too_many", most=MAX_KEYS)
        raise KeyRefused("keys.not_stored")
    return key


async def listed(layer, user: str) -> list[Key]:
    rows = await layer.execute_sql(LIST, {"user": user})
    return [Key(**row) for row in rows] if isinstance(rows, list) else []


async def revoke(layer, user: str, key_id: str) -> None:
    """Remove one of `user`'s keys: refused from the next request on, in every process."""
    await layer.execute_all([(REVOKE, {"id": key_id, "user": user})])


class KeyCheck:
    """Finds whose a key is (one lookup per request), and writes when keys were last used, at most once a minute
    each."""

    def __init__(self, layer, now=time.monotonic):
        self.layer, self.now = layer, now
        self._written: dict[str, float] = {}  # key id -> when this process last wrote its last use
        self._pending: dict[str, str] = {}  # key id -> when it was used (UTC text), not written yet
        self._writing: asyncio.Task | None = None

    async def user_of(self, key: str) -> str | None:
        """The user whose key `key` is, or None (malformed, wrong, or revoked). A database that fails refuses it."""
        if not KEY_SHAPE.fullmatch(key):
            return None
        rows = await self.layer.execute_sql(_FIND, {"hash": digest(key)})
        if not isinstance(rows, list) or not rows:
            return None
        self._touch(rows[0]["id"])
        return rows[0]["user_identifier"]

    def _touch(self, key_id: str) -> None:
        if self.now() - self._written.get(key_id, -LAST_USED_EVERY_S) < LAST_USED_EVERY_S:
            return
        self._written[key_id] = self.now()
        self._pending[key_id] = _now()
        if self._writing is None or self._writing.done():
            self._writing = spawn(self._write())

    async def _write(self) -> None:
        """The pending last uses in one transaction; a failed write is only a late 'last used'."""
        pending, self._pending = self._pending, {}
        try:
            await self.layer.execute_all([(_USED, {"id": key_id, "at": at}) for key_id, at in pending.items()])
        except Exception:  # the next use a minute later writes it again
            for key_id in pending:
                self._written.pop(key_id, None)
