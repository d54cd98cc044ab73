"""Chainlit's SQLAlchemy data layer as this app uses it, and its install.

Chainlit owns threads, steps, users and feedback, the history sidebar, rename, delete and search. The layer here
adds what Chainlit's does not do: SQLite-safe parameters and one writer thread, a thread looked up once, Chainlit's
hidden "run" steps left out, a step written only into its own thread (never another chat's message moved by its
id), a deleted chat never written again (and its attachments' text deleted with it), and a chat told once when its
turns cannot be saved (history/writes.py).
"""

import asyncio
import json
import logging
import re
from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import create_engine, event, text

from chainlit_door import sessions as door
from chainlit_door.server import config, data_layer_base
from history.schema import database_url, prepare, reason, sqlite_pragmas, where
from history.tables import DELETE_ATTACHMENTS
from history.words import say
from history.writes import tell_failing

logger = logging.getLogger("chainlit")  # beside Chainlit's own log lines

STEP_THREAD = 'SELECT "threadId" FROM steps WHERE "id" = :id'
SESSION_KEPT_S = 120  # a closed tab's chat stays in memory this long for a reconnect; then it is in the history
KNOWN_THREADS = 10_000  # how many thread ids to remember as existing
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # in a Python str, any surrogate is a lone one


def _remember(ids: dict, key: str, value=None) -> None:
    """Add to a bounded map of ids, forgetting the oldest."""
    ids[key] = value
    if len(ids) > KNOWN_THREADS:
        ids.pop(next(iter(ids)))


class HistoryLayer(data_layer_base()):
    """Chainlit's layer, plus: SQLite-safe parameters, and a chat told once when its turns are not saved."""

    def __init__(self, settings):
        super().__init__(conninfo=database_url(settings), storage_provider=None)
        self.sqlite = self._conninfo.startswith("sqlite")  # else PostgreSQL, on Chainlit's own `self.engine`
        if self.sqlite:
            self.sqlite_database = create_engine(self._conninfo.replace("+aiosqlite", ""), connect_args={"timeout": 30})
            event.listen(self.sqlite_database, "connect", sqlite_pragmas)
            self.sqlite_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="history")
        self.where = where(settings)
        self.known: dict[str, None] = {}  # threads this process wrote, oldest first
        self.unstored: set[str] = set()  # ids of messages shown but never stored (see `transient`)
        self.deleted: dict[str, None] = {}  # threads deleted here: never written again (a tab's close would)
        self.step_threads: dict[str, str] = {}  # step id -> its thread, for steps this process wrote
        self.on_delete = lambda thread_id: None  # told of each deleted thread (ui/sessions.py ends its chat)

    async def update_thread(self, thread_id: str, name=None, user_id=None, metadata=None, tags=None):
        """Chainlit stores a closed chat's session as the thread's metadata; its turns are already the thread's
        steps, so only the sidebar's values (and Chainlit's own keys) are kept. Chainlit also calls this before
        every step to make sure the thread exists: a thread this process wrote is not looked up again."""
        if thread_id in self.deleted or (name is None and user_id is None and metadata is None and tags is None
                                         and thread_id in self.known):
            return
        await super().update_thread(thread_id, name=name, user_id=user_id, metadata=metadata, tags=tags)
        _remember(self.known, thread_id)

    async def delete_thread(self, thread_id: str):
        self.known.pop(thread_id, None)
        _remember(self.deleted, thread_id)
        await super().delete_thread(thread_id)
        await self.execute_sql(DELETE_ATTACHMENTS, {"thread": thread_id})
        self.on_delete(thread_id)

    async def create_step(self, step_dict):
        """Steps of type "run" are Chainlit's record of a hook running (hidden in this chat): not stored, and
        messages are stored at the top level, as the chat shows them. A turn then costs 4 queries, not 10.
        Nothing is written to a deleted chat (its reply's last words would bring it back)."""
        if step_dict.get("type") == "run" or step_dict.get("threadId") in self.deleted:
            return
        if not await self._in_own_thread(step_dict):
            return
        step = {**step_dict, "parentId": None}
        await super().create_step(step if self.sqlite else _without_nul(step))

    async def _in_own_thread(self, step: dict) -> bool:
        """Whether `step` is new or already of its thread. Chainlit writes a step by its id whatever thread it names,
        and a message's id comes from the browser: a client sending the id of another chat's message (someone
        else's) would move that message into its own chat. Such a write is refused, and the chat told. One query per
        step id, the first time this process writes it."""
        step_id, thread_id = step.get("id"), step.get("threadId")
        if step_id is None or self.step_threads.get(step_id) == thread_id:
            return True
        rows = await self.execute_sql(STEP_THREAD, {"id": step_id})
        if isinstance(rows, list) and rows and rows[0]["threadId"] != thread_id:
            logger.warning("A write of step %s into thread %s was refused: it is a step of another thread",
                           step_id, thread_id)
            await tell_not_saved()
            return False
        _remember(self.step_threads, step_id, thread_id)
        return True

    async def get_thread_author(self, thread_id: str) -> str:
        """'' for a thread that does not exist (a deleted chat): Chainlit then answers 404, not a 500."""
        try:
            return await super().get_thread_author(thread_id)
        except ValueError:
            return ""

    async def delete_step(self, step_id: str):
        if step_id in self.unstored:
            self.unstored.discard(step_id)
            return
        await super().delete_step(step_id)

    async def execute_sql(self, query: str, parameters: dict):
        """Chainlit's contract (rows as dicts, or the row count; None after an error, which is logged), on a plain
        connection instead of an ORM session per query. SQLite runs each query whole in the layer's own thread:
        one hop instead of one per driver call (docs/benchmarks.md, "What the history costs"), and its one writer
        never waits for a lock."""
        values = {key: valid_text(self._plain(key, value)) for key, value in parameters.items()}
        try:
            if self.sqlite:
                rows = await asyncio.get_running_loop().run_in_executor(self.sqlite_thread, self._run_sqlite,
                                                                        query, values)
            else:
                async with self.engine.begin() as connection:
                    rows = _rows(await connection.execute(text(query), values))
        except Exception as error:  # any driver's error: the chat goes on without saving
            logger.warning("The history database failed: %s", reason(error))
            await tell_failing(self.where, error)
            return None
        return self.clean_result(rows) if isinstance(rows, list) else rows

    async def execute_all(self, statements: list[tuple[str, dict]]) -> None:
        """Run `statements` in one transaction: all of them, or none (it raises the database's error)."""
        statements = [(query, valid_text(values)) for query, values in statements]
        if self.sqlite:
            await asyncio.get_running_loop().run_in_executor(self.sqlite_thread, self._run_all_sqlite, statements)
            return
        async with self.engine.begin() as connection:
            for query, values in statements:
                await connection.execute(text(query), values)

    def _run_all_sqlite(self, statements: list[tuple[str, dict]]) -> None:
        with self.sqlite_database.begin() as connection:
            for query, values in statements:
                connection.execute(text(query), values)

    def _run_sqlite(self, query: str, values: dict):
        with self.sqlite_database.begin() as connection:
            return _rows(connection.execute(text(query), values))

    def _plain(self, key: str, value):
        """Lists go in as JSON where the column holds JSON (and everywhere on SQLite, which has no arrays)."""
        if isinstance(value, (list, tuple)) and (self.sqlite or key == "modes"):
            return json.dumps(value)
        return value


async def tell_not_saved() -> None:
    """Said in the chat whose write was refused (shown, never stored)."""
    import chainlit as cl
    if door.session_or_none() is None:  # no chat context here
        return
    notice = cl.ErrorMessage(content=say("not_saved", door.language()), author="system")
    notice.persisted = True
    await notice.send()


def valid_text(value):
    """`value` with each lone UTF-16 surrogate replaced by U+FFFD: a browser's JSON can carry one ("\\ud800"), no
    database's UTF-8 can hold it, and every write of that message (its step, the thread named after it) would
    fail. Every query's values pass through it (`execute_sql`, `execute_all`)."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {key: valid_text(item) for key, item in value.items()}
    if isinstance(value, list):
        return [valid_text(item) for item in value]
    return value


def _without_nul(value):
    """PostgreSQL's text and jsonb refuse the NUL character, which a model can write (a byte-level token): every
    later write of that reply would fail, leaving it cut off at its last save. It is dropped there (SQLite keeps it)."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {key: _without_nul(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_nul(item) for item in value]
    return value


def _rows(result):
    return [dict(row._mapping) for row in result.fetchall()] if result.returns_rows else result.rowcount


def install(settings) -> HistoryLayer | None:
    """Chainlit's data layer on the chosen database (tables made first); None when the history is off."""
    import chainlit as cl

    if not settings.history:
        return None
    prepare(settings)
    layer = HistoryLayer(settings)
    cl.data_layer(lambda: layer)
    # Chats are in the database: a closed tab's session need not stay in memory for Chainlit's default hour.
    config().project.session_timeout = min(config().project.session_timeout, SESSION_KEPT_S)
    return layer
