"""The app's own tables beside Chainlit's (made by history/schema.py), read and written here only: the password
hashes of the sign-in (web/signin.py, scripts/add_user.py), the thread each browser session last wrote to
(ui/sessions.py), the text of a question's attachments (ui/attachments.py), and each user's own defaults for new
chats (ui/my_defaults.py).

Each function takes the history's data layer (history/layer.py), whose `execute_sql` runs on SQLite's one writer
thread or PostgreSQL's pool; scripts/add_user.py, which runs without the app, passes its statements' text to its
own connection.
"""

ADD_LOGIN = ('INSERT INTO chat_logins ("identifier", "hash") VALUES (:name, :hash) '
             'ON CONFLICT ("identifier") DO UPDATE SET "hash" = EXCLUDED."hash"')
REMOVE_LOGIN = 'DELETE FROM chat_logins WHERE "identifier" = :name'
_LOGIN = 'SELECT "hash" FROM chat_logins WHERE "identifier" = :name'
LOGIN_EXISTS = 'SELECT 1 AS found FROM chat_logins WHERE "identifier" = :name'
_SESSION_UPSERT = ('INSERT INTO chat_sessions ("session_id", "thread_id", "user_identifier") '
                   'VALUES (:session, :thread, :user) ON CONFLICT ("session_id") DO UPDATE SET '
                   '"thread_id" = EXCLUDED."thread_id", "user_identifier" = EXCLUDED."user_identifier"')
_SESSION_THREAD = ('SELECT "thread_id" FROM chat_sessions WHERE "session_id" = :session AND '
                   '"user_identifier" = :user')
_ATTACHMENT_UPSERT = ('INSERT INTO chat_attachments ("for_id", "position", "thread_id", "name", "text") '
                      'VALUES (:for_id, :position, :thread, :name, :text) ON CONFLICT ("for_id", "position") '
                      'DO UPDATE SET "name" = EXCLUDED."name", "text" = EXCLUDED."text" '
                      'WHERE chat_attachments."thread_id" = EXCLUDED."thread_id"')  # never another chat's row
_ATTACHMENTS = ('SELECT "for_id", "name", "text" FROM chat_attachments WHERE "thread_id" = :thread '
                'ORDER BY "for_id", "position"')
DELETE_ATTACHMENTS = 'DELETE FROM chat_attachments WHERE "thread_id" = :thread'
_DEFAULTS_UPSERT = ('INSERT INTO chat_user_defaults ("user_identifier", "settings") VALUES (:user, :settings) '
                    'ON CONFLICT ("user_identifier") DO UPDATE SET "settings" = EXCLUDED."settings"')
_DEFAULTS = 'SELECT "settings" FROM chat_user_defaults WHERE "user_identifier" = :user'
_DEFAULTS_FORGET = 'DELETE FROM chat_user_defaults WHERE "user_identifier" = :user'


def _rows(result) -> list[dict]:
    """Chainlit's `execute_sql` returns a list of rows, or an int or None for a statement without rows."""
    return result if isinstance(result, list) else []


async def password_hash(layer, name: str) -> str | None:
    rows = _rows(await layer.execute_sql(_LOGIN, {"name": name}))
    return rows[0]["hash"] if rows else None


async def remember_session(layer, session_id: str, thread_id: str, user: str) -> None:
    await layer.execute_sql(_SESSION_UPSERT, {"session": session_id, "thread": thread_id, "user": user})


async def session_thread(layer, session_id: str, user: str) -> str | None:
    """The thread that `user`'s browser session `session_id` last wrote to, if any."""
    rows = _rows(await layer.execute_sql(_SESSION_THREAD, {"session": session_id, "user": user}))
    return rows[0]["thread_id"] if rows else None


async def keep_attachment(layer, for_id: str, position: int, thread_id: str, name: str, text: str) -> None:
    await layer.execute_sql(_ATTACHMENT_UPSERT, {"for_id": for_id, "position": position, "thread": thread_id,
                                                 "name": name, "text": text})


async def attachments(layer, thread_id: str) -> list[dict]:
    """A thread's attachments, each with the id of its question ("for_id"), its name and text, in order."""
    return _rows(await layer.execute_sql(_ATTACHMENTS, {"thread": thread_id}))


async def keep_defaults(layer, user: str, settings: str) -> None:
    """`settings` (the sidebar's values as JSON) become what `user`'s new chats start with."""
    await layer.execute_sql(_DEFAULTS_UPSERT, {"user": user, "settings": settings})


async def user_defaults(layer, user: str) -> str | None:
    rows = _rows(await layer.execute_sql(_DEFAULTS, {"user": user}))
    return rows[0]["settings"] if rows else None


async def forget_defaults(layer, user: str) -> None:
    await layer.execute_sql(_DEFAULTS_FORGET, {"user": user})
