"""Chats that survive a restart: Chainlit's SQLAlchemy data layer on a SQLite file, or on PostgreSQL.

Chainlit owns threads, steps, users and feedback, the history sidebar, rename, delete and search. This module
only picks the database (`CHAT_HISTORY_DB`, or `CHAT_DATABASE_URL` for PostgreSQL), creates the tables that
Chainlit's layer expects, keeps SQLite in WAL mode, tells a chat once when its turns cannot be saved, writes a
streaming reply every `SAVE_EVERY_S` so a killed server loses at most that much, and turns a stored thread back
into the turns of the prompt (with the attachments that ui/attachments.py keeps).
"""

import asyncio
import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from chainlit.data.sql_alchemy import SQLAlchemyDataLayer
from chainlit.logger import logger
from sqlalchemy import create_engine, event, text
from sqlalchemy.ext.asyncio import create_async_engine

from ui import attachments

TABLES_LOCK = 4_551_772  # PostgreSQL advisory lock id held while the tables are made
SAVE_EVERY_S = 1.0  # a reply being written reaches the database at least this often
CUT_OFF_NOTE = "*Cut off: the server stopped while this reply was being written.*"
SESSION_KEPT_S = 120  # a closed tab's chat stays in memory this long for a reconnect; then it is in the history
KNOWN_THREADS = 10_000  # how many thread ids to remember as existing
STATE_KEY = "history_failing"  # per chat: whether it was told that saving failed
SAVED_KEY = "history_saved_settings"  # per chat: the sidebar values last stored
WRITE_KEY = "history_settings_write"  # per chat: the last write of its sidebar (`keep_settings`)
IN_MEMORY_ONLY = {"turns", "prefs", "pending", "request_id", STATE_KEY, SAVED_KEY, WRITE_KEY}  # the app's session keys never stored
WRITING: set[asyncio.Task] = set()  # sidebar writes under way (`keep_settings`)

# Chainlit's tables, one column list for both databases: (name, SQLite type, PostgreSQL type).
_TEXT, _JSON, _BOOL, _INT, _LIST = ("TEXT", "TEXT"), ("TEXT", "JSONB"), ("INTEGER", "BOOLEAN"), ("INTEGER", "INTEGER"), \
    ("TEXT", "TEXT[]")
TABLES = {
    "users": [("id", _TEXT), ("identifier", _TEXT), ("metadata", _JSON), ("createdAt", _TEXT)],
    "threads": [("id", _TEXT), ("createdAt", _TEXT), ("name", _TEXT), ("userId", _TEXT), ("userIdentifier", _TEXT),
                ("tags", _LIST), ("metadata", _JSON)],
    "steps": [("id", _TEXT), ("name", _TEXT), ("type", _TEXT), ("threadId", _TEXT), ("parentId", _TEXT),
              ("command", _TEXT), ("modes", _JSON), ("streaming", _BOOL), ("waitForAnswer", _BOOL),
              ("isError", _BOOL), ("metadata", _JSON), ("tags", _LIST), ("input", _TEXT), ("output", _TEXT),
              ("createdAt", _TEXT), ("start", _TEXT), ("end", _TEXT), ("generation", _JSON), ("showInput", _TEXT),
              ("defaultOpen", _BOOL), ("autoCollapse", _BOOL), ("language", _TEXT), ("icon", _TEXT)],
    "elements": [("id", _TEXT), ("threadId", _TEXT), ("type", _TEXT), ("chainlitKey", _TEXT), ("url", _TEXT),
                 ("objectKey", _TEXT), ("name", _TEXT), ("display", _TEXT), ("size", _TEXT), ("language", _TEXT),
                 ("page", _INT), ("props", _JSON), ("autoPlay", _BOOL), ("playerConfig", _JSON), ("forId", _TEXT),
                 ("mime", _TEXT)],
    "feedbacks": [("id", _TEXT), ("forId", _TEXT), ("threadId", _TEXT), ("value", _INT), ("comment", _TEXT)],
}
UNIQUE = {"users": ["identifier"]}
INDEXES = [("steps", "threadId"), ("threads", "userId"), ("elements", "threadId"), ("feedbacks", "forId")]


def database_url(settings) -> str:
    """The SQLAlchemy URL of the history: PostgreSQL through asyncpg when set, else the SQLite file."""
    if settings.database_url:
        scheme, rest = settings.database_url.split("://", 1)
        return f"postgresql+asyncpg://{rest}" if "+" not in scheme else settings.database_url
    return f"sqlite+aiosqlite:///{settings.history_db.resolve()}"


def where(settings) -> str:
    """The database as a user would name it (no password)."""
    if settings.database_url:
        return "PostgreSQL at " + settings.database_url.split("@")[-1]
    return str(settings.history_db)


def schema(sqlite: bool) -> list[str]:
    """CREATE statements for Chainlit's tables; safe to run at every start."""
    statements = []
    for table, columns in TABLES.items():
        defs = [f'"{name}" {types[0] if sqlite else types[1]}' + (" PRIMARY KEY" if name == "id" else "")
                for name, types in columns]
        defs += [f'UNIQUE ("{name}")' for name in UNIQUE.get(table, [])]
        statements.append(f'CREATE TABLE IF NOT EXISTS {table} ({", ".join(defs)})')
    statements += [f'CREATE INDEX IF NOT EXISTS {table}_{column} ON {table} ("{column}")' for table, column in INDEXES]
    return statements


def open_engine(url: str):
    """An async SQLAlchemy engine; a SQLite file gets WAL (readers never wait for the writer) and a 30 s lock wait."""
    sqlite = url.startswith("sqlite")
    engine = create_async_engine(url, connect_args={"timeout": 30} if sqlite else {})
    if sqlite:
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
    return engine


def _sqlite_pragmas(connection, _record) -> None:
    cursor = connection.cursor()
    for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "busy_timeout=30000"):
        cursor.execute(f"PRAGMA {pragma}")
    cursor.close()


async def create_tables(url: str, extra: list[str] = ()) -> None:
    engine = open_engine(url)
    try:
        async with engine.begin() as connection:
            if not url.startswith("sqlite"):  # app processes started at once: PostgreSQL's CREATE TABLE IF NOT
                # EXISTS is no guard against another transaction making the same table (a duplicate-key error)
                await connection.execute(text(f"SELECT pg_advisory_xact_lock({TABLES_LOCK})"))
            for statement in [*schema(url.startswith("sqlite")), *extra]:
                await connection.execute(text(statement))
    finally:
        await engine.dispose()


def prepare(settings, extra: list[str] = ()) -> str:
    """Make the database ready before the server starts (own thread: Chainlit may already run an event loop).

    Exits with what went wrong and what to do when the database cannot be opened.
    """
    url, failure = database_url(settings), []
    if not settings.database_url:
        settings.history_db.parent.mkdir(parents=True, exist_ok=True)

    def run():
        try:
            asyncio.run(create_tables(url, extra))
        except Exception as error:  # any driver's error: reported as text below
            failure.append(error)

    worker = threading.Thread(target=run, name="history-prepare")
    worker.start()
    worker.join()
    if failure:
        print(f"ERNIE Chat cannot open its chat history ({where(settings)}): {_reason(failure[0])}. "
              "Fix CHAT_DATABASE_URL or CHAT_HISTORY_DB (see README, 'History and sign-in'), or run without a history "
              "with CHAT_HISTORY=false.", file=sys.stderr)
        raise SystemExit(1)
    return url


def _reason(error: BaseException) -> str:
    original = getattr(error, "orig", None) or error
    return str(original).strip().splitlines()[0] if str(original).strip() else type(original).__name__


def _remember(ids: dict, thread_id: str) -> None:
    """Add to a bounded set of thread ids, forgetting the oldest."""
    ids[thread_id] = None
    if len(ids) > KNOWN_THREADS:
        ids.pop(next(iter(ids)))


class HistoryLayer(SQLAlchemyDataLayer):
    """Chainlit's layer, plus: SQLite-safe parameters, and a chat told once when its turns are not saved."""

    def __init__(self, settings):
        super().__init__(conninfo=database_url(settings), storage_provider=None)
        self.sqlite = self._conninfo.startswith("sqlite")  # else PostgreSQL, on Chainlit's own async engine
        if self.sqlite:
            self.sqlite_engine = create_engine(self._conninfo.replace("+aiosqlite", ""), connect_args={"timeout": 30})
            event.listen(self.sqlite_engine, "connect", _sqlite_pragmas)
            self.sqlite_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="history")
        self.where = where(settings)
        self.known: dict[str, None] = {}  # threads this process wrote, oldest first
        self.unstored: set[str] = set()  # ids of messages shown but never stored (see `transient`)
        self.deleted: dict[str, None] = {}  # threads deleted here: never written again (a tab's close would)
        self.on_delete = lambda thread_id: None  # told of each deleted thread (ui/sessions.py ends its chat)

    async def update_thread(self, thread_id: str, name=None, user_id=None, metadata=None, tags=None):
        """Chainlit stores a closed chat's session as the thread's metadata; its turns are already the thread's
        steps, so only the sidebar's values (and Chainlit's own keys) are kept. Chainlit also calls this before
        every step to make sure the thread exists: a thread this process wrote is not looked up again."""
        if thread_id in self.deleted or (name is None and user_id is None and metadata is None and tags is None
                                         and thread_id in self.known):
            return
        if metadata:
            metadata = {key: value for key, value in metadata.items() if key not in IN_MEMORY_ONLY}
        await super().update_thread(thread_id, name=name, user_id=user_id, metadata=metadata, tags=tags)
        _remember(self.known, thread_id)

    async def delete_thread(self, thread_id: str):
        self.known.pop(thread_id, None)
        _remember(self.deleted, thread_id)
        await super().delete_thread(thread_id)
        await self.execute_sql(attachments.DELETE, {"thread": thread_id})
        self.on_delete(thread_id)

    async def create_step(self, step_dict):
        """Steps of type "run" are Chainlit's record of a hook running (hidden in this chat): not stored, and
        messages are stored at the top level, as the chat shows them. A turn then costs 4 queries, not 10.
        Nothing is written to a deleted chat (its reply's last words would bring it back)."""
        if step_dict.get("type") == "run" or step_dict.get("threadId") in self.deleted:
            return
        step = {**step_dict, "parentId": None}
        await super().create_step(step if self.sqlite else _without_nul(step))

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
        one hop instead of one per driver call (a third of the cost), and its one writer never waits for a lock."""
        values = {key: self._plain(key, value) for key, value in parameters.items()}
        try:
            if self.sqlite:
                rows = await asyncio.get_running_loop().run_in_executor(self.sqlite_thread, self._run_sqlite,
                                                                        query, values)
            else:
                async with self.engine.begin() as connection:
                    rows = _rows(await connection.execute(text(query), values))
        except Exception as error:  # any driver's error: the chat goes on without saving
            logger.warning("The history database failed: %s", _reason(error))
            await _tell_failing(self, error)
            return None
        return self.clean_result(rows) if isinstance(rows, list) else rows

    def _run_sqlite(self, query: str, values: dict):
        with self.sqlite_engine.begin() as connection:
            return _rows(connection.execute(text(query), values))

    def _plain(self, key: str, value):
        """Lists go in as JSON where the column holds JSON (and everywhere on SQLite, which has no arrays)."""
        if isinstance(value, (list, tuple)) and (self.sqlite or key == "modes"):
            return json.dumps(value)
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


async def _tell_failing(layer: HistoryLayer, error: BaseException) -> None:
    """Once per chat: a disk that is full (or read-only) fails some writes and not others, so no "saved again"."""
    session = _chat_session()
    if session is None or session.get(STATE_KEY):
        return
    session[STATE_KEY] = True
    await _notice(f"⚠️ This chat could not be saved: the history database ({layer.where}) said “{_reason(error)}”. "
                  "The chat goes on; turns written while this lasts are missing from the history. Free disk space "
                  "or fix the database's permissions, and saving resumes by itself.")


def _chat_session() -> dict | None:
    """This chat's user session, or None outside a chat (sign-in, the history list)."""
    from chainlit.context import context
    from chainlit.user_session import user_sessions

    try:
        return user_sessions.setdefault(context.session.id, {})
    except Exception:  # no chat context here
        return None


async def _notice(content: str) -> None:
    import chainlit as cl

    message = cl.Message(content=content, author="system")
    message.persisted = True  # shown, never written: the database is what fails
    await message.send()


def transient(message, layer) -> None:
    """Show `message` without storing it (a notice removed moments later, like "every slot is busy")."""
    message.persisted = True
    if layer is not None:
        layer.unstored.add(message.id)


class ReplySaver:
    """Writes a reply to the history while it streams, marked as cut off until the finished reply replaces it."""

    def __init__(self, reply, layer):
        self.reply, self.layer = reply, layer
        self.saved_at = time.monotonic()
        self.task: asyncio.Task | None = None

    def shown(self) -> None:
        """The user now sees the reply's content; write it if the last write is done and old enough."""
        if self.layer is None or (self.task and not self.task.done()):
            return
        if time.monotonic() - self.saved_at < SAVE_EVERY_S:
            return
        self.saved_at = time.monotonic()
        if not self.reply.created_at:  # stamped now, as send() would: the history is ordered by it
            from chainlit.utils import utc_now
            self.reply.created_at = utc_now()
        step, content = self.reply.to_dict(), self.reply.content
        step.update(output=f"{content}\n\n{CUT_OFF_NOTE}", streaming=False,
                    metadata={**self.reply.metadata, "answer": content, "cut_off": True})
        self.task = asyncio.create_task(self.layer.create_step(step))

    async def settle(self) -> None:
        """Wait for a write in flight, so it cannot land after (and over) the finished reply."""
        if self.task is not None:
            await asyncio.gather(self.task, return_exceptions=True)


def keep_settings(layer) -> None:
    """Store the chat's sidebar with it when it changed, as soon as the chat is in the history (a killed server
    never gets to store it at the tab's close, as Chainlit does).

    Written in the background: a reply must not wait for it. A new chat's first message queues the thread's
    creation and the question ahead of it on the database's one writer; 32 new chats asking at once waited
    for all of those writes before reaching the engine (time to first token at 32 chats on the H200: 217 ms,
    against 82 ms without the history)."""
    import chainlit as cl
    from chainlit.context import context

    values = dict(context.session.chat_settings or {})
    if layer is None or not context.session.has_first_interaction or cl.user_session.get(SAVED_KEY) == values:
        return
    cl.user_session.set(SAVED_KEY, values)
    previous = cl.user_session.get(WRITE_KEY)

    async def write():  # after the chat's previous write: on PostgreSQL two writes may run at once, the older last
        if previous is not None:
            await asyncio.gather(previous, return_exceptions=True)
        await layer.update_thread(context.session.thread_id, metadata={"chat_settings": values})

    task = asyncio.create_task(write())
    cl.user_session.set(WRITE_KEY, task)
    WRITING.add(task)  # the loop keeps only a weak reference to a task
    task.add_done_callback(WRITING.discard)


def turns_from(thread: dict, attached: dict[str, list[dict]]) -> list[dict]:
    """The prompt's turns from a stored thread: each answered user message (with its attachments, by message id,
    from `attachments.stored`) and its reply's plain text."""
    steps = thread.get("steps") or []
    asked = {step["id"]: step for step in steps if step.get("type") == "user_message"}
    turns = []
    for step in steps:
        meta = step.get("metadata") or {}
        if isinstance(meta, str):
            meta = json.loads(meta or "{}")
        question = asked.get(meta.get("for", ""))
        if step.get("type") == "assistant_message" and "answer" in meta and question is not None:
            turn = {"id": question["id"], "role": "user", "content": question.get("output") or ""}
            if question["id"] in attached:
                turn["attachments"] = attached[question["id"]]
            turns += [turn, {"role": "assistant", "content": meta["answer"]}]
    return turns


def install(settings, extra: list[str] = ()) -> HistoryLayer | None:
    """Chainlit's data layer on the chosen database (tables made first); None when the history is off."""
    import chainlit as cl
    from chainlit.config import config

    if not settings.history:
        return None
    prepare(settings, extra)
    layer = HistoryLayer(settings)
    cl.data_layer(lambda: layer)
    # Chats are in the database: a closed tab's session need not stay in memory for Chainlit's default hour.
    config.project.session_timeout = min(config.project.session_timeout, SESSION_KEPT_S)
    return layer
