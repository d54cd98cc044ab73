"""Telling every other open chat something: the engine and its preset are shared by all of them."""

import chainlit as cl

from chainlit_patches import enter, live_sessions
from tasks import spawn


async def broadcast(content: str) -> None:
    """Post `content` in every chat but this one, without waiting for them."""
    me = cl.context.session.id
    for session in live_sessions():
        if session.id != me:
            spawn(_send_to(session, content))


async def _send_to(session, content: str) -> None:
    enter(session)  # this task's context now points at the other chat
    await cl.Message(content=content, author="system").send()
