"""The app's own tables (history/tables.py) on a real SQLite file through the app's data layer: what is written
comes back to its owner only, a later write replaces an earlier one, and deleting a chat deletes its attachments."""

from engine.settings import load_settings
from history import tables
from history.layer import HistoryLayer
from history.schema import prepare
from web.signin import hash_password, password_matches


async def test_the_apps_own_tables_keep_what_a_chat_needs_and_only_for_its_owner(tmp_path):
    settings = load_settings(history_db=tmp_path / "chats.db")
    prepare(settings)
    layer = HistoryLayer(settings)

    assert await tables.password_hash(layer, "ada") is None
    await layer.execute_sql(tables.ADD_LOGIN, {"name": "ada", "hash": hash_password("first password")})
    await layer.execute_sql(tables.ADD_LOGIN, {"name": "ada", "hash": hash_password("second password")})
    assert password_matches("second password", await tables.password_hash(layer, "ada"))
    assert not password_matches("first password", await tables.password_hash(layer, "ada"))

    await tables.remember_session(layer, "session-1", "thread-a", "ada")
    await tables.remember_session(layer, "session-1", "thread-b", "ada")  # the session went on in a new chat
    assert await tables.session_thread(layer, "session-1", "ada") == "thread-b"
    assert await tables.session_thread(layer, "session-1", "bob") is None, "another user's session is not theirs"

    await tables.keep_attachment(layer, "question-2", 0, "thread-b", "b.md", "second")
    await tables.keep_attachment(layer, "question-1", 1, "thread-b", "notes.txt", "cut")
    await tables.keep_attachment(layer, "question-1", 1, "thread-b", "notes.txt", "whole 你好")  # kept as sent
    await tables.keep_attachment(layer, "question-1", 0, "thread-b", "a.csv", "x,y")
    assert [(row["for_id"], row["name"], row["text"]) for row in await tables.attachments(layer, "thread-b")] == [
        ("question-1", "a.csv", "x,y"), ("question-1", "notes.txt", "whole 你好"), ("question-2", "b.md", "second")]
    await layer.execute_sql(tables.DELETE_ATTACHMENTS, {"thread": "thread-b"})
    assert await tables.attachments(layer, "thread-b") == []
