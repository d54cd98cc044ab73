"""Text no database can hold, through a real server: a message with a lone UTF-16 surrogate (a browser's JSON can
carry "\\ud800") is answered, stored with U+FFFD in its place, and the chat is told so, never that the disk failed."""

from harness.chat_client import ChatClient
from harness.stored import step_texts
from history.layer import valid_text
from history.writes import _not_text


async def test_a_lone_surrogate_is_replaced_and_said_and_the_chat_is_saved_not_blamed_on_the_disk(app_server):
    chat = await ChatClient(app_server.url).connect()
    try:
        await chat.change_settings({"max_tokens": 8})
        reply = await chat.ask("a\ud800b: what is this?")
        assert "reply tokens" in reply.content, chat.all_text()[-300:]
        shown = chat.all_text()
        assert "Free disk space" not in shown and "could not be saved" not in shown, shown[-500:]
        assert "each was replaced by �" in shown
        reopened = await ChatClient(app_server.url, thread_id=chat.thread_id).connect()
        try:
            texts = [text for _, text in step_texts(reopened.resumed)]
            assert "a\ufffdb: what is this?" in texts and reply.content in texts, texts
        finally:
            await reopened.close()
    finally:
        await chat.close()


def test_lone_surrogates_become_replacement_characters_and_an_encoding_error_is_not_the_disk():
    assert valid_text({"output": "a\udfffb", "tags": ["\ud800", "ok 😀"], "n": 1}) == {
        "output": "a\ufffdb", "tags": ["\ufffd", "ok 😀"], "n": 1}
    try:
        "a\ud800".encode("utf-8")
    except UnicodeEncodeError as error:
        wrapped = RuntimeError("statement failed")
        wrapped.orig = error
        assert _not_text(wrapped) and not _not_text(OSError(28, "No space left on device"))
