"""The history's database: which one (a SQLite file or PostgreSQL), its tables, and SQLite's WAL mode.

Chainlit's SQLAlchemy data layer expects its tables to exist; this module makes them, for both databases from
one column list, beside the app's own tables (sign-in hashes, the thread each session writes to, attachments'
text, API keys' hashes, usage), before the server starts. SQLAlchemy's engine objects are called `database` here:
"engine" is the model's.
"""

import asyncio
import sys
import threading

from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import create_async_engine

TABLES_LOCK = 4_551_772  # PostgreSQL advisory lock id held while the tables are made

# Chainlit's tables, one column list for both databases: (name, SQLite type, PostgreSQL type).
_TEXT, _JSON, _BOOL = ("TEXT", "TEXT"), ("TEXT", "JSONB"), ("INTEGER", "BOOLEAN")
_INT, _LIST = ("INTEGER", "INTEGER"), ("TEXT", "TEXT[]")
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

# The app's own tables beside Chainlit's, read and written by history/tables.py only: passwords' hashes, the thread
# each session last wrote to, and attachments' text.
LOGINS_TABLE = 'CREATE TABLE IF NOT EXISTS chat_logins ("identifier" TEXT PRIMARY KEY, "hash" TEXT NOT NULL)'
SESSIONS_TABLE = ('CREATE TABLE IF NOT EXISTS chat_sessions ("session_id" TEXT PRIMARY KEY, "thread_id" TEXT NOT NULL, '
                  '"user_identifier" TEXT NOT NULL)')
ATTACHMENTS_TABLE = ('CREATE TABLE IF NOT EXISTS chat_attachments ("for_id" TEXT NOT NULL, '
                     '"position" INTEGER NOT NULL, "thread_id" TEXT NOT NULL, "name" TEXT NOT NULL, '
                     '"text" TEXT NOT NULL, PRIMARY KEY ("for_id", "position"))')
ATTACHMENTS_INDEX = 'CREATE INDEX IF NOT EXISTS chat_attachments_thread ON chat_attachments ("thread_id")'
# Users' API keys, only their SHA-256 (history/keys.py), and tokens used per user, day and source (history/usage.py).
KEYS_TABLE = ('CREATE TABLE IF NOT EXISTS chat_api_keys ("id" TEXT PRIMARY KEY, "user_identifier" TEXT NOT NULL, '
              '"name" TEXT NOT NULL, "hash" TEXT NOT NULL UNIQUE, "created_at" TEXT NOT NULL, "last_used_at" TEXT)')
KEYS_INDEX = 'CREATE INDEX IF NOT EXISTS chat_api_keys_user ON chat_api_keys ("user_identifier")'
USAGE_TABLE = ('CREATE TABLE IF NOT EXISTS chat_usage ("user_identifier" TEXT NOT NULL, "day" TEXT NOT NULL, '
               '"source" TEXT NOT NULL, "requests" BIGINT NOT NULL, "prompt_tokens" BIGINT NOT NULL, '
               '"cached_tokens" BIGINT NOT NULL, "reply_tokens" BIGINT NOT NULL, '
               'PRIMARY KEY ("user_identifier", "day", "source"))')
# Each user's own defaults for new chats ("Use these for new chats" in the sidebar): the sidebar's values as JSON.
DEFAULTS_TABLE = ('CREATE TABLE IF NOT EXISTS chat_user_defaults ("user_identifier" TEXT PRIMARY KEY, '
                  '"settings" TEXT NOT NULL)')
APP_TABLES = [LOGINS_TABLE, SESSIONS_TABLE, ATTACHMENTS_TABLE, ATTACHMENTS_INDEX, KEYS_TABLE, KEYS_INDEX, USAGE_TABLE,
              DEFAULTS_TABLE]
# Each user's library (history/library.py): documents, their passages, and the passages' full-text index: FTS5 on
# SQLite, a tsvector column with a GIN index on PostgreSQL, both over the words history/passages.py makes.
LIBRARY_TABLES = [
    'CREATE TABLE IF NOT EXISTS chat_library_documents ("id" TEXT PRIMARY KEY, "user_identifier" TEXT NOT NULL, '
    '"name" TEXT NOT NULL, "bytes" INTEGER NOT NULL, "chars" INTEGER NOT NULL, "passages" INTEGER NOT NULL, '
    '"created_at" TEXT NOT NULL)',
    'CREATE INDEX IF NOT EXISTS chat_library_documents_user ON chat_library_documents ("user_identifier")',
]
_PASSAGES = ('CREATE TABLE IF NOT EXISTS chat_library_passages ("id" TEXT PRIMARY KEY, "document_id" TEXT NOT NULL, '
             '"position" INTEGER NOT NULL, "user_identifier" TEXT NOT NULL, "text" TEXT NOT NULL{terms})')
_PASSAGES_INDEX = 'CREATE INDEX IF NOT EXISTS chat_library_passages_document ON chat_library_passages ("document_id")'
SQLITE_LIBRARY = [_PASSAGES.format(terms=""), _PASSAGES_INDEX,
                  "CREATE VIRTUAL TABLE IF NOT EXISTS chat_library_index USING fts5(terms, passage_id UNINDEXED, "
                  "user_identifier UNINDEXED, tokenize='unicode61 remove_diacritics 0')"]
POSTGRES_LIBRARY = [
    _PASSAGES.format(terms=', "terms" tsvector NOT NULL'), _PASSAGES_INDEX,
    'CREATE INDEX IF NOT EXISTS chat_library_passages_terms ON chat_library_passages USING GIN ("terms")',
    'CREATE INDEX IF NOT EXISTS chat_library_passages_user ON chat_library_passages ("user_identifier")']


def app_tables(sqlite: bool) -> list[str]:
    """CREATE statements for the app's own tables on SQLite or PostgreSQL; safe to run at every start."""
    return [*APP_TABLES, *LIBRARY_TABLES, *(SQLITE_LIBRARY if sqlite else POSTGRES_LIBRARY)]


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


def open_database(url: str):
    """An async SQLAlchemy engine on `url`; a SQLite file gets WAL (readers never wait for the writer) and a 30 s
    lock wait."""
    sqlite = url.startswith("sqlite")
    database = create_async_engine(url, connect_args={"timeout": 30} if sqlite else {})
    if sqlite:
        event.listen(database.sync_engine, "connect", sqlite_pragmas)
    return database


def sqlite_pragmas(connection, _record) -> None:
    cursor = connection.cursor()
    for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "busy_timeout=30000"):
        cursor.execute(f"PRAGMA {pragma}")
    cursor.close()


async def create_tables(url: str) -> None:
    """Chainlit's tables and the app's own, made if missing (safe at every start)."""
    database = open_database(url)
    try:
        async with database.begin() as connection:
            if not url.startswith("sqlite"):  # app processes started at once: PostgreSQL's CREATE TABLE IF NOT
                # EXISTS is no guard against another transaction making the same table (a duplicate-key error)
                await connection.execute(text(f"SELECT pg_advisory_xact_lock({TABLES_LOCK})"))
            for statement in [*schema(url.startswith("sqlite")), *app_tables(url.startswith("sqlite"))]:
                await connection.execute(text(statement))
    finally:
        await database.dispose()


def prepare(settings) -> str:
    """Make the database ready before the server starts (own thread: Chainlit may already run an event loop).

    Exits with what went wrong and what to do when the database cannot be opened.
    """
    url, failure = database_url(settings), []
    if not settings.database_url:
        settings.history_db.parent.mkdir(parents=True, exist_ok=True)

    def run():
        try:
            asyncio.run(create_tables(url))
        except Exception as error:  # any driver's error: reported as text below
            failure.append(error)

    worker = threading.Thread(target=run, name="history-prepare")
    worker.start()
    worker.join()
    if failure:
        print(f"ERNIE Chat cannot open its chat history ({where(settings)}): {reason(failure[0])}. "
              "Fix CHAT_DATABASE_URL or CHAT_HISTORY_DB (see README, 'History and sign-in'), or run without a history "
              "with CHAT_HISTORY=false.", file=sys.stderr)
        raise SystemExit(1)
    return url


def reason(error: BaseException) -> str:
    """The database's own words for what went wrong, in one line."""
    original = getattr(error, "orig", None) or error
    return str(original).strip().splitlines()[0] if str(original).strip() else type(original).__name__
