"""Telling every other open chat something: the engine and its preset are shared by all of them."""

import chainlit as cl
from chainlit.context import init_ws_context
from chainlit.session import ws_sessions_id

from tasks import spawn


async def broadcast(content: str) -> None:
    """Post `content` in every chat but this one, without waiting for them."""
    me = cl.context.session.id
    for session in list(ws_sessions_id.values()):
        if session.id != me:
            spawn(_send_to(session, content))


async def _send_to(session, content: str) -> None:
    init_ws_context(session)  # this task's context now points at the other chat
    await cl.Message(content=content, author="system").send()
