"""Chainlit's chats from the outside: their sessions, their sockets and what the current task sends to.

Chainlit has no public way to reach another chat (a broadcast, a deleted chat's tabs), to find the session of a
socket event or of a page's session id, to reopen a stored thread for a session (its `resume_thread`, with its owner
check), to run code after its own socket handlers, or to answer a message again as its edit handler does; each of
those is one function here, named after what it does, so the rest of the app never names Chainlit's registry,
context or emitter. tests/test_chainlit_patches.py checks each against the Chainlit installed.
"""

import chainlit as cl


def session():
    """The Chainlit session of the chat this task serves (its `cl.context.session`)."""
    return cl.context.session


def emitter():
    """What sends to this task's chat page (steps, the task's start and end, the chat's commands)."""
    return cl.context.emitter


def session_or_none():
    """This task's chat session, or None where the task serves no chat (a sign-in, the history's list, a route)."""
    try:
        return cl.context.session
    except Exception:  # Chainlit raises its own ChainlitContextException outside a chat
        return None


def language() -> str | None:
    """The language this chat's page asked for (e.g. "zh-CN"), or None outside a chat."""
    current = session_or_none()
    return getattr(current, "language", None) if current is not None else None


def signed_in():
    """This chat's Chainlit user (`cl.User` or its persisted form), or None where nobody signed in."""
    return cl.context.session.user


def wrap_socket_handler(event: str, wrap) -> None:
    """Replace Chainlit's socket handler of `event` by `wrap(chainlit_handler)`; a `-w` reload wraps Chainlit's
    own again, never the wrapper of the previous load."""
    from chainlit.server import sio

    handlers = sio.handlers["/"]
    original = getattr(handlers[event], "chainlit_handler", handlers[event])
    wrapped = wrap(original)
    wrapped.chainlit_handler = original
    handlers[event] = wrapped


def live_sessions() -> list:
    """Every chat's Chainlit session that has a socket now (its WebsocketSession)."""
    from chainlit.session import ws_sessions_id

    return list(ws_sessions_id.values())


def session_of_socket(sid: str):
    """The session of a socket event's `sid`, or None."""
    from chainlit.session import WebsocketSession

    return WebsocketSession.get(sid)


def shown_messages() -> list:
    """The messages this chat's page shows, oldest first (Chainlit's chat context)."""
    from chainlit.chat_context import chat_context

    return list(chat_context.get())


async def rerun_message(message) -> None:
    """Answer `message` again with the app's on_message, as Chainlit's edit handler does, the page told a task runs
    (its Stop shows)."""
    import asyncio

    from chainlit.config import config
    from chainlit.context import context

    await context.emitter.task_start()
    try:
        await config.code.on_message(message)
    except asyncio.CancelledError:
        pass
    finally:
        await context.emitter.task_end()


def session_of_id(session_id: str | None):
    """The open chat of Chainlit's session id (the page's `X-Chainlit-Session-id` cookie), or None."""
    from chainlit.session import WebsocketSession

    return WebsocketSession.get_by_id(session_id) if session_id else None


def enter(session) -> None:
    """This task's Chainlit context is `session`'s from now on (what it sends goes to that chat)."""
    from chainlit.context import init_ws_context

    init_ws_context(session)


async def resume(session) -> dict | None:
    """The stored thread `session.thread_id_to_resume`, if the session's user owns it (Chainlit's own check); it
    also restores the chat's settings into the session."""
    from chainlit.socket import resume_thread

    return await resume_thread(session)

async def write_now(write):
    """Await `write()` (data layer calls) outside this chat's socket session, so none is queued behind its first
    message; returns what it returns."""
    from chainlit.context import init_http_context

    from lifetime.tasks import spawn

    async def outside():
        init_http_context()  # in this task only: its context is a copy
        return await write()

    return await spawn(outside())




def kept_with(session, name: str, make=None):
    """What the app keeps with an open chat under `name`, on its Chainlit session: gone with the session, never
    stored with the thread (unlike `cl.user_session`). Made by `make()` on first ask; None without `make`."""
    attribute = f"ernie_{name}"
    value = getattr(session, attribute, None)
    if value is None and make is not None:
        value = make()
        setattr(session, attribute, value)
    return value


def keep_with(session, name: str, value) -> None:
    """Keep `value` with the open chat of `session` under `name` (None forgets it)."""
    setattr(session, f"ernie_{name}", value)
