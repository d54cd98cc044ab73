"""Where this app changes Chainlit (2.12.0) from the outside, and the internals of Chainlit's that ui/ uses, each
in one place, with why.

- **Engine modules pinned across `-w` reloads** (`restore_engine_modules`, `pin_engine_modules`): `chainlit run -w`
  drops every project module from `sys.modules` and runs app.py again on each save. The engine keeps running
  through that, and what it yields and raises are instances of the classes of its first import: a second copy
  of engine/ would make `except ChatError` and `isinstance(item, Stats)` miss them. So app.py puts the
  first-loaded engine modules back before importing them; edits to engine/ take effect at the next restart.
- **No 1 ms pause per message and step** (`drop_constructor_pauses`): Chainlit's `Message` and `Step`
  constructors call `time.sleep(0.001)` so that two steps made one after the other get different `created_at`
  stamps. They are made on the server's one event loop, which carries every chat's stream and vLLM's output
  handler, so each message would hold all of them, and many messages sent together add up. The stamps are
  `datetime.now()` in microseconds, which differ anyway between two steps, so the pause buys nothing here.
- **A longer ping timeout** (`tolerate_quiet_servers`): Socket.IO drops a connection when the browser has not
  answered a ping within 20 s. Where vLLM runs on the same few CPU cores as the web server, a busy machine's
  timers can stand still longer than that (docs/benchmarks.md), which would cost healthy chats their replies. A
  closed tab is still noticed at once (its socket closes); only a connection lost without a word (a laptop gone
  to sleep) is noticed later.
- **Socket handlers wrapped** (`wrap_socket_handler`): ui/reconnect.py and ui/sessions.py run code after
  Chainlit's own `connection_successful` and `connect`.
- **Each process its own upload folder** (`own_upload_folder`): a stopping Chainlit server deletes its whole
  files folder (`FILES_DIRECTORY`, read by `chainlit.config` for the sessions and by `chainlit.server` for the
  shutdown), which took the uploads of every other server run from the same folder.
- **The chats' sessions** (`live_sessions`, `session_of_socket`, `enter`, `resume`): Chainlit has no public way
  to reach another chat (a broadcast, a deleted chat's tabs), find the session of a socket event, or reopen a
  stored thread for a session (its `resume_thread`, with its owner check); these name its registry and functions.
- **The user checked each time** (`check_users_each_time`): Chainlit's `get_current_user` trusts a signed cookie
  for its whole life (15 days) and its feedback routes change any message's feedback by its id. Every route that
  asks for the user (FastAPI's `dependency_overrides`, a public way), the socket's connect (`chainlit.socket`'s own
  name for it) and each chat message over an open socket now also ask the app (web/users.py).
- **Edits answered by the app** (`shown_messages`, `rerun_message`): Chainlit's `edit_message` handler removes every
  later message (from the page and the history) and stores the new text before the app sees the edit, so a refused
  edit lost the chat's turns; ui/edits.py replaces that handler and reruns the message as Chainlit's did.
- **A settings change or message too large for the socket** (`bound_settings_changes`): Socket.IO
  (python-engineio 4, under Chainlit) closes a websocket whose frame is over its 1 MB buffer, so a huge system
  prompt or message dropped the chat's connection without a word. Such a frame of a settings change becomes a
  change holding only its size (`OVERSIZED`), which the sidebar refuses with a sentence like any other bad value;
  such a message, new or edited, arrives without its words, their size in its metadata (`OVERSIZED_MESSAGE`), and
  the chat says so (ui/oversized.py); other events are left alone.
- **An empty file can be uploaded** (`keep_empty_uploads`): Chainlit's `persist_file` takes 0 bytes for "no
  content" and raises, so its upload route answered an empty file with an HTTP 500. The file is kept as the empty
  file it is, and ui/attachments.py refuses it in the chat by name ("x.txt is empty").
- **A chat's thread opens at its first words** (`open_threads_at_first_words`): Chainlit takes a chat's first
  message as its "first interaction" even when it holds no words (a chip pressed before typing: Status, Library,
  Import), and so a button pressed or an upload box answered first (named after the button or the file): it names
  the stored thread after the empty text ("Untitled Conversation", never renamed by the questions that follow) and
  tells the page an empty interaction, which the page takes for none, so it never moves to the thread's address,
  never lists it, and never shows Stop. Until the chat's first words nothing of it is kept now: what it writes
  waits in Chainlit's own queue and the page is told nothing, so a chat of chips alone (an Export, a Status) is no
  chat in the history, named after a chip; the first message with words opens it as Chainlit opens a chat, named
  after them, and writes what waited (the chips' messages and answers) into it.
- **Writes of another thread now** (`write_now`): Chainlit queues a chat's step writes until its first message
  (`queue_until_user_message`); an import writes a new thread's steps from a chat that may have sent only the
  Import command, so they run in a context of their own, as Chainlit's HTTP routes do.
- **Chainlit's Stop notice** (`STOP_NOTICE`): the message its Stop handler posts, which the app replaces by
  ending the reply in "*Stopped.*" (ui/reply.py).

Nothing here imports the engine or ui/: it must be importable before app.py has put the engine modules back.
tests/test_chainlit_patches.py fails when a Chainlit upgrade changes what these patches rely on.
"""

import importlib
import json
import os
import sys
import time
import types
from pathlib import Path

from chainlit_door.sessions import enter, session_of_socket, wrap_socket_handler
from lifetime.runtime import kept

CHAINLIT_VERSION = "2.12.0"  # the version these patches were written against (and tested on)
PING_TIMEOUT_S = 120  # a server quiet for this long (less the 25 s ping interval) still keeps its chats
PAUSING_MODULES = ("chainlit.message", "chainlit.step")  # the only users of Chainlit's constructor pause


def install(user_checks=None) -> None:
    """Every change above, in one call at the app's start; a `-w` reload calls it again and each change replaces
    what the previous load put in place. `user_checks`: (is_user, refusal, removed) for `check_users_each_time`
    (web/users.py), None where nobody signs in."""
    pin_engine_modules()
    drop_constructor_pauses()  # Chainlit's 1 ms sleep per message would hold every chat's stream
    tolerate_quiet_servers()  # a busy server must not cost a chat its reply
    bound_settings_changes()  # nor a settings change or message too large for the socket its connection
    open_threads_at_first_words()  # a chat is kept from its first words: named after them, never after a chip
    own_upload_folder()  # a stopping server deletes only its own uploads
    keep_empty_uploads()  # an empty file is refused in the chat by name, not by an HTTP 500
    if user_checks is not None:
        check_users_each_time(*user_checks)


def _pinned() -> dict:
    return kept("engine_modules", dict)


def restore_engine_modules() -> None:
    """Put the first-loaded engine modules back into `sys.modules` (a no-op on the first load)."""
    for name, module in _pinned().items():
        sys.modules.setdefault(name, module)


def pin_engine_modules() -> None:
    """Remember the engine modules loaded now, for the next `-w` reload to reuse."""
    pinned = _pinned()
    pinned.clear()
    pinned.update({name: module for name, module in sys.modules.items()
                   if name == "engine" or name.startswith("engine.")})


def _clock_without_pause() -> types.SimpleNamespace:
    clock = types.SimpleNamespace(**{name: getattr(time, name) for name in dir(time) if not name.startswith("_")})
    clock.sleep = lambda seconds: None
    return clock


def drop_constructor_pauses() -> None:
    """Chainlit's message and step modules get a `time` whose `sleep` returns at once (only they use it)."""
    clock = _clock_without_pause()
    for name in PAUSING_MODULES:  # `chainlit.step` the attribute is the decorator: import the module by name
        importlib.import_module(name).time = clock


def tolerate_quiet_servers() -> None:
    """Chainlit's socket server announces (and applies) the longer ping timeout to every new connection."""
    from chainlit.server import sio

    sio.eio.ping_timeout = PING_TIMEOUT_S


OVERSIZED = "oversized_change_bytes"  # the one value of a settings change too large for the socket: its size
OVERSIZED_MESSAGE = "oversized_message_bytes"  # in a message's metadata: its words were too large, this their size
_SETTINGS_FRAME = '42["chat_settings_change"'  # a Socket.IO event frame of the default namespace, without an ack
_MESSAGE_FRAMES = ('42["client_message"', '42["edit_message"')


class _BoundedWebsocket:
    """engineio's websocket, whose over-large settings frames arrive as their size alone, and over-large chat
    messages without their words, their size in their metadata."""

    def __init__(self, ws, most: int):
        self._ws, self._most = ws, most

    def __getattr__(self, name):
        return getattr(self._ws, name)

    async def wait(self):
        data = await self._ws.wait()
        if not isinstance(data, str) or len(data) <= self._most:
            return data
        if data.startswith(_SETTINGS_FRAME):
            return f'{_SETTINGS_FRAME},{{"{OVERSIZED}": {len(data.encode())}}}]'
        if data.startswith(_MESSAGE_FRAMES):
            return _message_without_words(data)
        return data


def _message_without_words(frame: str) -> str:
    """A chat message's frame with its words left out and their size noted; a frame that is not one is returned as
    it came (engineio then closes the socket as before). The frame is at most the server's websocket limit (16 MB
    under uvicorn), so reading it is bounded work."""
    try:
        event, payload = json.loads(frame[2:])
        message = payload["message"]
        message["metadata"] = {**(message.get("metadata") or {}), OVERSIZED_MESSAGE: len(frame.encode())}
        message["output"] = ""
    except (ValueError, KeyError, TypeError, AttributeError):
        return frame
    return "42" + json.dumps([event, payload])


def bound_settings_changes() -> None:
    """A settings change over the socket's buffer reaches the app as `{OVERSIZED: its bytes}` instead of closing
    the chat's connection; a `-w` reload wraps engineio's own handler again, not the previous wrapper."""
    from engineio.async_socket import AsyncSocket

    original = getattr(AsyncSocket._websocket_handler, "engineio_handler", AsyncSocket._websocket_handler)

    async def _websocket_handler(self, ws):
        return await original(self, _BoundedWebsocket(ws, self.server.max_http_buffer_size))

    _websocket_handler.engineio_handler = original
    AsyncSocket._websocket_handler = _websocket_handler


WORDED = "ernie_thread_worded"  # on a session: the thread its first words opened (a deleted chat's next one is new)


def open_threads_at_first_words() -> None:
    """Chainlit opens a chat's thread (`init_thread`) only at a message with words: a chip's own message, a button
    or an upload box answered first leave the chat unopened, its writes queued (Chainlit queues them while
    `has_first_interaction` is false) and the page untold; the first words open it as Chainlit does, named after
    them, and the queue is written. A `-w` reload wraps Chainlit's own methods again, never the previous wrappers."""
    from chainlit.emitter import ChainlitEmitter

    opening = getattr(ChainlitEmitter.init_thread, "chainlit_method", ChainlitEmitter.init_thread)
    receiving = getattr(ChainlitEmitter.process_message, "chainlit_method", ChainlitEmitter.process_message)

    async def init_thread(self, interaction: str):
        if getattr(self.session, WORDED, None) != self.session.thread_id:  # no words yet: nothing kept, none told
            self.session.has_first_interaction = False
            return
        return await opening(self, interaction)

    async def process_message(self, payload):
        unopened, worded = not self.session.has_first_interaction, (payload["message"].get("output") or "").strip()
        if unopened and worded:
            setattr(self.session, WORDED, self.session.thread_id)
        message = await receiving(self, payload)  # it awaits nothing: the writes it starts run after this
        if unopened and not worded:
            self.session.has_first_interaction = False  # the chip's message waits in the queue for the first words
        return message

    init_thread.chainlit_method, process_message.chainlit_method = opening, receiving
    ChainlitEmitter.init_thread, ChainlitEmitter.process_message = init_thread, process_message


STOP_NOTICE = "Task manually stopped."  # chainlit.socket's stop handler posts it


def keep_empty_uploads() -> None:
    """Chainlit's sessions keep an uploaded file of 0 bytes (as a copy of an empty file) instead of raising; a
    `-w` reload wraps Chainlit's own method again, never the wrapper of the previous load."""
    import tempfile

    from chainlit.session import BaseSession

    original = getattr(BaseSession.persist_file, "chainlit_method", BaseSession.persist_file)

    async def persist_file(self, name, mime, path=None, content=None):
        if path or content is None or len(content):
            return await original(self, name, mime, path=path, content=content)
        with tempfile.NamedTemporaryFile(prefix="empty-upload-") as empty:
            return await original(self, name, mime, path=empty.name)

    persist_file.chainlit_method = original
    BaseSession.persist_file = persist_file


def own_upload_folder() -> None:
    """Chainlit keeps this process's uploads in `.files/<process id>` (the sessions' and the shutdown's copy of the
    path)."""
    import chainlit.config
    import chainlit.server

    own = Path(chainlit.config.APP_ROOT) / ".files" / str(os.getpid())
    own.mkdir(parents=True, exist_ok=True)
    chainlit.config.FILES_DIRECTORY = chainlit.server.FILES_DIRECTORY = own


def check_users_each_time(is_user, refusal, removed: str) -> None:
    """After Chainlit's own check of a request's user: `await is_user(user)` False answers 401 (`removed`, said), and
    a non-empty `await refusal(request, user)` 403 with it; a socket whose user is gone is refused or closed."""
    from chainlit import auth, socket
    from chainlit.server import app
    from fastapi import Depends, HTTPException, Request

    chainlit_check = auth.get_current_user

    async def current_user(request: Request, token: str | None = Depends(auth.reuseable_oauth)):
        user = await chainlit_check(token)
        if user is not None and not await is_user(user):
            raise HTTPException(status_code=401, detail=removed)
        if user is not None and (why := await refusal(request, user)):
            raise HTTPException(status_code=403, detail=why)
        return user

    async def socket_user(token: str):
        user = await chainlit_check(token=token)
        return user if user is not None and await is_user(user) else None

    app.dependency_overrides[chainlit_check] = current_user
    socket.get_current_user = socket_user
    wrap_socket_handler("client_message", lambda original: _for_users_only(original, is_user, removed))


def _for_users_only(original, is_user, removed: str):
    async def client_message(sid, payload):
        import chainlit as cl
        from chainlit.server import sio

        session = session_of_socket(sid)
        if session is None or session.user is None or await is_user(session.user):
            return await original(sid, payload)
        enter(session)
        notice = cl.ErrorMessage(content=removed, author="system")
        notice.persisted = True  # shown, never stored
        await notice.send()
        await sio.disconnect(sid)
    return client_message


