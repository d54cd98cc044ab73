"""A settings change is applied before a message sent after it.

Chainlit handles each socket event as a task of its own, and it announces a settings change to the browser
(`task_start`) before it calls the app's hook, while a message's task goes on meanwhile: a message sent right
after a change of 'max new tokens' (or the system prompt) could be answered with the old value. The settings
event's task marks the chat's session the moment it begins (before any of Chainlit's own awaits: the tasks of
one connection's events begin in the order the events came), and a message waits until no change is under way.
A preset switch is such a change too: a message sent during it waits for the engine anyway.
"""

import asyncio

from chainlit_door import sessions as door
from chainlit_door.sessions import session_of_socket, wrap_socket_handler



class _Changes:
    """A chat's settings changes being applied: how many, and set while there are none."""

    def __init__(self):
        self.pending, self.none = 0, asyncio.Event()
        self.none.set()


def _changes(session) -> _Changes:
    return door.kept_with(session, "settings_changes", _Changes)


def apply_settings_first() -> None:
    """Around Chainlit's settings handler: the session is marked while a change of its settings is applied."""
    wrap_socket_handler("chat_settings_change", _marking)


def _marking(original):
    async def chat_settings_change(sid, settings):
        session = session_of_socket(sid)
        if session is None:
            return await original(sid, settings)
        changes = _changes(session)
        changes.pending += 1
        changes.none.clear()
        try:
            return await original(sid, settings)
        finally:
            changes.pending -= 1
            if changes.pending == 0:
                changes.none.set()

    return chat_settings_change


async def applied(session) -> None:
    """Return once no settings change of `session` is being applied."""
    await _changes(session).none.wait()
