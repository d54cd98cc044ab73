"""Messages too large for the chat's socket, refused by their size in the chat.

Socket.IO closes a connection whose frame is over its 1 MB buffer; `chainlit_patches.bound_settings_changes` lets a
new or edited message of that size through without its words, their size in its metadata (`OVERSIZED_MESSAGE`).
A new message is refused by app.py's `on_message`. An edit is refused here, before Chainlit applies it: Chainlit's
edit handler would put the empty text in place of the message and remove every turn after it, so the message keeps
its words and the chat stays as it was.
"""

import chainlit as cl
from chainlit_patches import OVERSIZED_MESSAGE, enter, session_of_socket, wrap_socket_handler

from ui.words import say


def size_of(message: dict | None) -> int | None:
    """The bytes of a message that came without its words, or None for a message that came whole."""
    metadata = (message or {}).get("metadata") if isinstance(message, dict) else None
    size = metadata.get(OVERSIZED_MESSAGE) if isinstance(metadata, dict) else None
    return size if isinstance(size, int) else None


async def refuse(size: int) -> None:
    await cl.ErrorMessage(content=say("message.oversized", mb=size / 1e6), author="system").send()


def refuse_oversized_edits() -> None:
    wrap_socket_handler("edit_message", _refusing)


def _refusing(original):
    async def edit_message(sid, payload):
        size = size_of(payload.get("message")) if isinstance(payload, dict) else None
        session = session_of_socket(sid)
        if size is None or session is None:
            return await original(sid, payload)
        enter(session)
        await refuse(size)
    return edit_message
