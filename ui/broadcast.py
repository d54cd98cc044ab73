"""Telling every other open chat something: the engine and its preset are shared by all of them."""

import chainlit as cl

from chainlit_door.sessions import enter, live_sessions
from lifetime.tasks import spawn
from ui.words import say
from chainlit_door import sessions as door


async def broadcast(key: str, **values) -> None:
    """Post the text under `key` (ui/words/) in every chat but this one, each in its own language, without waiting
    for them."""
    me = door.session().id
    for session in live_sessions():
        if session.id != me:
            spawn(_send_to(session, key, values))


async def _send_to(session, key: str, values: dict) -> None:
    enter(session)  # this task's context now points at the other chat, and its language
    await cl.Message(content=say(key, **values), author="system").send()
