"""A chat lives as long as its session, not its socket, and a deleted chat stays deleted.

- **A dropped socket** (a network blip, a proxy's idle reset) is not the end of a chat: Chainlit keeps the
  session for `session_timeout` and a reconnect with the same session id restores it, its running reply then
  streaming to the new socket. The reply is aborted when the chat really ends: at once on "new chat" (the
  browser clears its session), else once the session expired without the tab coming back.
- **A tab that reconnects to a restarted server** (or after its session expired) brings its old session id
  and no thread id; Chainlit would make it a new, empty chat. The thread each session last wrote to is kept in
  `chat_sessions` (history/schema.py), so such a tab goes on in its own thread, with its turns in the prompt; the
  same holds for a tab that a load balancer sends to another app process when its own died. A reply its server
  was writing when it died is said to have been cut off.
- **A deleted chat**: its running reply is aborted, its tab told, and the tab's next message starts a new
  chat; the history layer (history/layer.py) never writes the deleted thread again.
"""

import asyncio
import json
import logging
import uuid

from chainlit_door.server import config

from chainlit_door.sessions import enter, live_sessions, resume, session_of_socket, wrap_socket_handler
from history import tables
from lifetime.tasks import spawn
from ui.words import say
from chainlit_door import sessions as door

_REMEMBERED = "ernie_chat_remembered_thread"  # on Chainlit's session object: the thread id already written
_CONTINUED = "ernie_chat_continued_thread"  # on it too: the stored thread a tab back after a restart goes on in
CUT_OFF_NOTICE, DELETED_NOTICE = "session.cut_off", "session.deleted"  # said in each chat's language (ui/words/)
log = logging.getLogger("chainlit")


def remember(layer) -> None:
    """Note (in the background, once per thread) which thread this chat's session writes to."""
    session = door.session()
    user = getattr(session, "user", None)
    if layer is None or user is None or not session.has_first_interaction:
        return
    if getattr(session, _REMEMBERED, None) == session.thread_id:
        return
    setattr(session, _REMEMBERED, session.thread_id)
    values = (session.id, session.thread_id, user.identifier)

    async def write():
        try:
            await tables.remember_session(layer, *values)
        except Exception:  # the history's own failure notice covers a failing database
            log.exception("could not note the thread of session %s", session.id)

    spawn(write())


def continue_threads_after_restarts() -> None:
    """Around Chainlit's socket connect: a new session whose id the history knows (a tab back after a restart or
    an expired session) is made to go on in its thread before any of its messages is handled; the socket's
    events wait for the connect handler, so none can start a new thread first."""
    wrap_socket_handler("connect", _continuing)


def _continuing(original):
    async def connect(sid, environ, auth):
        accepted = await original(sid, environ, auth)
        session = session_of_socket(sid)
        if accepted and session is not None and not session.restored and not (auth or {}).get("threadId"):
            try:
                await _continue_thread(session)
            except Exception:  # the chat then simply starts anew; the history's own notice covers the database
                log.exception("could not look up the chat of session %s", session.id)
        return accepted

    return connect


async def _continue_thread(session) -> None:
    from chainlit_door.server import data_layer

    layer = data_layer()
    if layer is None or session.user is None:
        return
    session.thread_id_to_resume = await tables.session_thread(layer, session.id, session.user.identifier)
    if session.thread_id_to_resume is None:
        return
    thread = await resume(session)  # Chainlit's own owner check; it restores the chat's settings too
    session.thread_id_to_resume = None
    if thread is not None:
        session.thread_id, session.has_first_interaction = thread["id"], True
        setattr(session, _REMEMBERED, thread["id"])
        setattr(session, _CONTINUED, thread)


def continued_thread(session) -> dict | None:
    """The stored thread this session goes on in after a restart (once: its turns are then in the chat)."""
    thread = getattr(session, _CONTINUED, None)
    setattr(session, _CONTINUED, None)
    return thread


async def tell_if_cut_off(thread: dict) -> None:
    """A tab back after its server died mid-reply still shows that reply as if it were being written: say why it
    stopped (the history marks it cut off)."""
    from chainlit import Message

    replies = [step for step in thread.get("steps") or [] if step.get("type") == "assistant_message"
               and "answer" in _metadata(step)]
    if replies and _metadata(replies[-1]).get("cut_off"):
        await Message(content=say(CUT_OFF_NOTICE), author="system").send()


def _metadata(step: dict) -> dict:
    meta = step.get("metadata") or {}
    return json.loads(meta) if isinstance(meta, str) else meta


def abort_when_gone(abort) -> None:
    """The socket closed: abort the running reply once the chat has really ended, not on a reconnect."""
    session = door.session()
    if session.to_clear:  # "new chat": this chat is over
        spawn(abort())
        return
    socket_id = session.socket_id

    async def unless_back():
        await asyncio.sleep(config().project.session_timeout)
        if session.socket_id == socket_id:  # no reconnect restored the session
            await abort()

    spawn(unless_back())


def end_deleted(thread_id: str, abort_request, forget_state) -> None:
    """Live sessions on a deleted thread: their reply aborted, their tab told, their next message a new chat
    (`forget_state(session)` drops the chat's state and returns it)."""
    from chainlit import Message

    for session in live_sessions():
        if session.thread_id != thread_id:
            continue
        session.thread_id, session.has_first_interaction = str(uuid.uuid4()), False
        forgotten = forget_state(session)
        request_id = forgotten and forgotten.request_id

        async def tell(session=session, request_id=request_id):
            enter(session)
            notice = Message(content=say(DELETED_NOTICE), author="system")
            notice.persisted = True  # the chat it belongs to is gone
            await notice.send()
            if request_id:
                await abort_request(request_id)

        spawn(tell())
