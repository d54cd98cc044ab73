"""Each change chainlit_door/ makes to Chainlit, and each internal its sessions.py reaches, still fits the Chainlit
installed (fast; no server).

Every test checks both halves: that Chainlit still behaves as the patch assumes (so the patch is still needed, and
still lands where it should) and that the patch changes that behaviour. A Chainlit upgrade that drops the pause,
renames a socket handler or stops re-importing project modules on `-w` fails here, naming the patch to revisit.
"""

import importlib
import importlib.metadata
import inspect
import json
import os
import sys
import time
import types

import socketio
from chainlit.context import init_http_context

from chainlit_door import patches as chainlit_patches
from chainlit_door import sessions as chainlit_sessions


def test_the_patches_are_written_for_the_chainlit_installed():
    installed = importlib.metadata.version("chainlit")
    assert installed == chainlit_patches.CHAINLIT_VERSION, (
        f"Chainlit {installed} is installed, the patches were written for {chainlit_patches.CHAINLIT_VERSION}: "
        "check each of them against the new version (the tests below say which still fit), then update "
        "CHAINLIT_VERSION")


def _sleeps_made_by_one_message_and_step(monkeypatch) -> list[float]:
    import chainlit as cl

    init_http_context()
    sleeps: list[float] = []
    monkeypatch.setattr(time, "sleep", sleeps.append)
    cl.Message(content="a message")
    cl.Step(name="a step")
    return sleeps


async def test_chainlit_pauses_in_its_message_and_step_constructors_and_the_patch_takes_that_off(monkeypatch):
    for name in chainlit_patches.PAUSING_MODULES:  # as Chainlit ships them, even where the app was imported before
        monkeypatch.setattr(importlib.import_module(name), "time", time)
    assert _sleeps_made_by_one_message_and_step(monkeypatch) == [0.001, 0.001], \
        "Chainlit no longer pauses in Message() and Step(): drop_constructor_pauses is no longer needed"
    chainlit_patches.drop_constructor_pauses()
    assert _sleeps_made_by_one_message_and_step(monkeypatch) == [], "drop_constructor_pauses no longer lands"
    for name in chainlit_patches.PAUSING_MODULES:
        assert importlib.import_module(name).time.monotonic is time.monotonic, "the rest of `time` is untouched"


def test_chainlit_keeps_socketios_20_s_ping_timeout_and_the_patch_lengthens_what_clients_are_told(monkeypatch):
    import chainlit.server
    import engineio.async_server

    assert "ping_timeout" not in inspect.getsource(chainlit.server), \
        "Chainlit sets a ping timeout of its own now: check whether tolerate_quiet_servers is still needed"
    as_chainlit_makes_it = socketio.AsyncServer(cors_allowed_origins=[], async_mode="asgi")
    assert as_chainlit_makes_it.eio.ping_timeout == 20 < chainlit_patches.PING_TIMEOUT_S
    assert "'pingTimeout': int(self.ping_timeout * 1000)" in inspect.getsource(engineio.async_server), \
        "Engine.IO no longer tells each client the server's ping_timeout attribute: the patch would not reach it"
    monkeypatch.setattr(chainlit.server.sio.eio, "ping_timeout", 20)
    chainlit_patches.tolerate_quiet_servers()
    assert chainlit.server.sio.eio.ping_timeout == chainlit_patches.PING_TIMEOUT_S


def test_the_socket_handlers_the_app_wraps_exist_take_what_the_wrappers_pass_and_wrap_once(monkeypatch):
    import chainlit.socket
    from chainlit.server import sio
    from chainlit.session import WebsocketSession

    handlers = sio.handlers["/"]
    for event, name, parameters in (("connect", "connect", ["sid", "environ", "auth"]),
                                    ("connection_successful", "connection_successful", ["sid"]),
                                    ("chat_settings_change", "change_settings", ["sid", "settings"])):
        chainlits = getattr(chainlit.socket, name)
        assert getattr(handlers[event], "chainlit_handler", handlers[event]) is chainlits, \
            f"Chainlit's '{event}' handler moved: ui/reconnect.py, ui/sessions.py and ui/settings_first.py wrap it"
        assert list(inspect.signature(chainlits).parameters) == parameters, \
            f"Chainlit's '{event}' takes other arguments"
        monkeypatch.setitem(handlers, event, handlers[event])
        for _ in range(2):  # a `-w` reload wraps again
            chainlit_sessions.wrap_socket_handler(event, lambda original: (lambda *args: original(*args)))
        assert handlers[event].chainlit_handler is chainlits, "a second wrap wraps Chainlit's own, not the first wrap"
    assert "self.restored = True" in inspect.getsource(WebsocketSession), \
        "Chainlit no longer marks a session restored by a reconnect: ui/reconnect.py cannot tell it apart"


def test_a_watch_reload_drops_the_apps_modules_and_the_pinned_engine_modules_come_back(tmp_path, monkeypatch):
    from chainlit.config import load_module

    (tmp_path / "app.py").write_text("")
    (tmp_path / "project_module.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("project_module")
    load_module(str(tmp_path / "app.py"), force_refresh=True)  # what Chainlit runs on each save under -w
    monkeypatch.delitem(sys.modules, str(tmp_path / "app.py"), raising=False)
    assert "project_module" not in sys.modules, \
        "a -w reload no longer drops the app's modules: pin_engine_modules may no longer be needed"

    import engine.errors

    chainlit_patches.pin_engine_modules()
    monkeypatch.delitem(sys.modules, "engine.errors")
    chainlit_patches.restore_engine_modules()
    assert sys.modules["engine.errors"] is engine.errors, "the first-loaded module is back, not a fresh copy"


async def test_the_chats_sessions_are_reached_through_chainlits_registry_which_has_no_public_door():
    import chainlit
    from chainlit.context import context
    from chainlit.session import WebsocketSession

    def emit(*args):
        return None

    session = WebsocketSession(id="a-chat", socket_id="its-socket", emit=emit, emit_call=emit, user_env={},
                               client_type="webapp")
    try:
        assert session in chainlit_sessions.live_sessions(), "Chainlit's registry of live sessions moved"
        assert chainlit_sessions.session_of_socket("its-socket") is session
        chainlit_sessions.enter(session)
        assert context.session is session, "init_ws_context no longer points this task at the session"
    finally:
        await session.delete()
    assert session not in chainlit_sessions.live_sessions()
    assert chainlit_sessions.session_of_socket("its-socket") is None
    assert [name for name in chainlit.__all__ if "session" in name.lower()] == ["user_session"], (
        "Chainlit exports a new session API: live_sessions, session_of_socket and enter may use it now")


def test_resume_is_chainlits_own_resume_thread_with_its_owner_check():
    import chainlit.socket

    resume_thread = chainlit.socket.resume_thread
    assert inspect.iscoroutinefunction(resume_thread) and list(inspect.signature(resume_thread).parameters) == [
        "session"], "Chainlit's resume_thread changed: check chainlit_sessions.resume"
    assert "author" in inspect.getsource(resume_thread).lower(), "resume_thread no longer checks the thread's owner"


def test_chainlits_stop_handler_still_posts_the_notice_the_app_takes_back():
    import chainlit.socket

    assert f'"{chainlit_patches.STOP_NOTICE}"' in inspect.getsource(chainlit.socket), (
        "Chainlit's Stop no longer posts its notice: ui/reply.stop need not remove it")


def test_a_stopping_server_deletes_its_files_folder_and_the_patch_gives_each_process_its_own(monkeypatch, tmp_path):
    import chainlit.config
    import chainlit.server

    assert "rmtree(FILES_DIRECTORY)" in inspect.getsource(chainlit.server), (
        "a stopping Chainlit server no longer deletes its files folder: own_upload_folder may be unneeded")
    monkeypatch.setattr(chainlit.config, "FILES_DIRECTORY", chainlit.config.FILES_DIRECTORY)
    monkeypatch.setattr(chainlit.server, "FILES_DIRECTORY", chainlit.server.FILES_DIRECTORY)
    monkeypatch.setattr(chainlit.config, "APP_ROOT", str(tmp_path))
    chainlit_patches.own_upload_folder()
    from chainlit.session import HTTPSession

    own = tmp_path / ".files" / str(os.getpid())
    assert HTTPSession(id="s", client_type="webapp").files_dir == own / "s", "the sessions' uploads go there"
    assert chainlit.server.FILES_DIRECTORY == own, "and the shutdown deletes only that folder"


async def test_engineio_drops_a_socket_over_its_buffer_and_the_patch_turns_a_large_change_or_message_into_its_size(
        monkeypatch):
    from engineio.async_socket import AsyncSocket
    from engineio.base_server import BaseServer

    engineio_own = getattr(AsyncSocket._websocket_handler, "engineio_handler", AsyncSocket._websocket_handler)
    assert "packet is too large" in inspect.getsource(engineio_own), "engineio no longer closes on a large frame"
    assert inspect.signature(BaseServer.__init__).parameters["max_http_buffer_size"].default == 1_000_000

    seen = []

    async def recording(self, ws):
        seen.extend([await ws.wait() for _ in range(4)])

    monkeypatch.setattr(AsyncSocket, "_websocket_handler", recording)
    chainlit_patches.bound_settings_changes()
    chainlit_patches.bound_settings_changes()  # a `-w` reload
    assert AsyncSocket._websocket_handler.engineio_handler is recording, "wrapped once"
    message_frame = '42["client_message",' + json.dumps({"message": {"id": "m", "output": "z" * 2_000, "metadata": {
        "kept": 1}}, "fileReferences": [{"id": "f"}]}) + "]"
    frames = iter(['42["chat_settings_change",{"system_prompt":"' + "x" * 2_000 + '"}]',
                   '42["client_message",' + "y" * 2_000 + "]", '42["chat_settings_change",{"top_p":0.5}]',
                   message_frame])

    class Socket:
        server = types.SimpleNamespace(max_http_buffer_size=1_000)

    async def wait():
        return next(frames)

    await AsyncSocket._websocket_handler(Socket(), types.SimpleNamespace(wait=wait))
    assert seen[0] == '42["chat_settings_change",{"oversized_change_bytes": 2047}]'
    assert len(seen[1]) > 2_000 and seen[2].endswith('{"top_p":0.5}]'), "other frames pass as they came"
    event, payload = json.loads(seen[3][2:])
    assert event == "client_message" and payload["fileReferences"] == [{"id": "f"}]
    assert payload["message"] == {"id": "m", "output": "", "metadata": {
        "kept": 1, chainlit_patches.OVERSIZED_MESSAGE: len(message_frame.encode())}}, "the message without its words"


async def test_chainlit_refuses_to_keep_an_empty_upload_and_the_patch_keeps_it_as_an_empty_file(monkeypatch, tmp_path):
    import pytest
    from chainlit.session import BaseSession, HTTPSession

    import chainlit.config

    monkeypatch.setattr(chainlit.config, "FILES_DIRECTORY", tmp_path)
    monkeypatch.setattr(BaseSession, "persist_file", BaseSession.persist_file)
    session = HTTPSession(id="s", client_type="webapp")
    original = getattr(BaseSession.persist_file, "chainlit_method", BaseSession.persist_file)
    with pytest.raises(ValueError, match="Either path or content must be provided"):
        await original(session, name="x.txt", mime="text/plain", content=b"")  # the upload route's 500
    chainlit_patches.keep_empty_uploads()
    chainlit_patches.keep_empty_uploads()  # a `-w` reload
    assert BaseSession.persist_file.chainlit_method is original, "wrapped once"
    kept = await session.persist_file(name="x.txt", mime="text/plain", content=b"")
    assert session.files[kept["id"]]["size"] == 0 and session.files[kept["id"]]["path"].read_bytes() == b""
    other = await session.persist_file(name="y.txt", mime="text/plain", content=b"text")
    assert session.files[other["id"]]["path"].read_bytes() == b"text", "other files are kept as Chainlit keeps them"


async def test_chainlit_opens_a_thread_on_a_message_without_words_and_the_patch_waits_for_words(monkeypatch):
    import types

    from chainlit.emitter import ChainlitEmitter

    for name in ("init_thread", "process_message"):
        monkeypatch.setattr(ChainlitEmitter, name, getattr(ChainlitEmitter, name))
    original = getattr(ChainlitEmitter.init_thread, "chainlit_method", ChainlitEmitter.init_thread)
    told, kept = [], []

    async def emit(event, data):  # Chainlit's emitter sends through its session's `emit`
        told.append((event, data))

    async def flush(interaction):  # what Chainlit writes of the thread: its name
        kept.append(interaction)

    emitter = ChainlitEmitter.__new__(ChainlitEmitter)
    emitter.session = types.SimpleNamespace(has_first_interaction=True, thread_id="t1", user=None, emit=emit)
    emitter.flush_thread_queues = flush
    await original(emitter, "")  # a chip's own message: Chainlit names the thread "" and tells the page so
    assert told == [("first_interaction", {"interaction": "", "thread_id": "t1"})] and kept == [""], \
        "Chainlit no longer opens a thread on an empty first interaction: open_threads_at_first_words may go"
    told.clear(), kept.clear()
    chainlit_patches.open_threads_at_first_words()
    chainlit_patches.open_threads_at_first_words()  # a `-w` reload
    assert ChainlitEmitter.init_thread.chainlit_method is original, "wrapped once"
    await emitter.init_thread("  ")
    assert told == [] and kept == [], "no words: nothing of the chat is kept, the page not told"
    assert not emitter.session.has_first_interaction, "what the chat writes meanwhile waits in Chainlit's queue"
    await emitter.init_thread("export_all")  # a button pressed before any words (Chainlit names the thread after it)
    assert told == [] and kept == [] and not emitter.session.has_first_interaction
    seen = []

    async def receive(self, payload):  # Chainlit's own process_message: it opens the thread when not yet opened
        seen.append(self.session.has_first_interaction)
        self.session.has_first_interaction = True

    monkeypatch.setattr(ChainlitEmitter.process_message, "chainlit_method", receive)
    chainlit_patches.open_threads_at_first_words()
    await emitter.process_message({"message": {"output": "", "command": "Status"}})
    assert not emitter.session.has_first_interaction, "a chip's own message leaves the chat unopened"
    await emitter.init_thread("")  # as Chainlit's process_message does for it
    await emitter.process_message({"message": {"output": "How hot is the kettle?"}})
    await emitter.process_message({"message": {"output": "And now?"}})
    assert seen == [False, False, True], "the first message with words, and only it, opens the thread"
    assert kept == [] and told == [], "nothing kept, nothing told, until Chainlit's init_thread for the words"
    await emitter.init_thread("How hot is the kettle?")
    assert kept == ["How hot is the kettle?"], "the thread is named after the first words"
    assert told == [("first_interaction", {"interaction": "How hot is the kettle?", "thread_id": "t1"})]


def test_chainlits_edit_handler_removes_later_messages_before_the_app_sees_the_edit_and_the_app_replaces_it(
        monkeypatch):
    """ui/edits.py answers `edit_message` itself (a refused edit keeps the chat's turns): Chainlit's own handler
    removes every later message, and changes the edited one, before calling on_message."""
    import chainlit.socket
    from chainlit.server import sio

    from ui import edits

    handlers = sio.handlers["/"]
    chainlits = chainlit.socket.edit_message
    assert getattr(handlers["edit_message"], "chainlit_handler", handlers["edit_message"]) is chainlits, (
        "Chainlit's 'edit_message' handler moved: ui/edits.py replaces it")
    source = inspect.getsource(chainlits)
    assert source.index("await message.remove()") < source.index("config.code.on_message(orig_message)"), (
        "Chainlit's edit handler no longer removes the later messages before the app sees the edit: ui/edits.py "
        "may not need to replace it")
    assert list(inspect.signature(chainlits).parameters) == ["sid", "payload"]
    monkeypatch.setitem(handlers, "edit_message", handlers["edit_message"])
    edits.handle_edits(lambda: None)
    assert handlers["edit_message"] is not chainlits and handlers["edit_message"].chainlit_handler is chainlits, (
        "the app's edit handler is the one Socket.IO calls now")
    assert "chat_context.get()" in source and "config.code.on_message" in inspect.getsource(
        chainlit_sessions.rerun_message), "shown_messages and rerun_message read what Chainlit's handler reads"


async def test_chainlit_trusts_a_signed_cookie_and_the_patch_asks_the_app_at_each_request_and_socket(monkeypatch):
    """check_users_each_time: Chainlit's `get_current_user` checks a token's signature and age only; after the
    patch the routes' dependency, the socket's connect and each message also ask the app."""
    from chainlit import auth, socket
    from chainlit.server import app, sio

    assert "dependency_overrides" not in inspect.getsource(auth.get_current_user)
    assert "get_current_user(token=token)" in inspect.getsource(socket._authenticate_connection), (
        "Chainlit's socket no longer asks socket.get_current_user at connect: check_users_each_time must follow it")
    monkeypatch.setattr(app, "dependency_overrides", {})
    monkeypatch.setattr(socket, "get_current_user", socket.get_current_user)
    monkeypatch.setitem(sio.handlers["/"], "client_message", sio.handlers["/"]["client_message"])
    asked = []

    async def is_user(user):
        asked.append(user.identifier)
        return user.identifier != "removed"

    async def no_refusal(request, user):
        return None

    chainlit_patches.check_users_each_time(is_user, no_refusal, "removed from this server")
    assert auth.get_current_user in app.dependency_overrides, "every route that asks for the user asks the app too"
    assert socket.get_current_user is not auth.get_current_user, "the socket's connect asks the app too"
    assert sio.handlers["/"]["client_message"].chainlit_handler is socket.message, (
        "each chat message over an open socket asks the app too")

    removed = types.SimpleNamespace(identifier="removed")

    async def chainlits_check(token=None):
        return removed

    monkeypatch.setattr(auth, "get_current_user", chainlits_check)  # a valid cookie of a user since removed
    chainlit_patches.check_users_each_time(is_user, no_refusal, "removed from this server")
    assert await socket.get_current_user("a-signed-token") is None and asked == ["removed"], (
        "a signed cookie of a removed user opens no socket")


async def test_write_now_runs_outside_the_chats_queued_writes():
    """Chainlit queues a chat's step writes until its first message; write_now runs a write in an HTTP context."""
    import chainlit.data

    assert "queue_until_user_message" in inspect.getsource(chainlit.data), (
        "Chainlit no longer queues a chat's writes until its first message: write_now may be unneeded")
    from chainlit.context import context

    async def where():
        return type(context.session).__name__

    assert await chainlit_sessions.write_now(where) == "HTTPSession"


def test_install_makes_every_change_in_one_call(monkeypatch):
    """boot/wiring.py calls install() once: each change lands from it (and a second call, a `-w` reload, is fine)."""
    made = []
    for name in ("pin_engine_modules", "drop_constructor_pauses", "tolerate_quiet_servers", "bound_settings_changes",
                 "open_threads_at_first_words", "own_upload_folder", "keep_empty_uploads"):
        monkeypatch.setattr(chainlit_patches, name, lambda name=name: made.append(name))
    monkeypatch.setattr(chainlit_patches, "check_users_each_time", lambda *checks: made.append(checks))
    chainlit_patches.install()
    assert len(made) == 7, "without a history nobody signs in: no user check"
    chainlit_patches.install(("is_user", "refusal", "removed"))
    assert made[-1] == ("is_user", "refusal", "removed") and len(made) == 15
