"""Messages too large for the chat's socket, refused by their size in the chat.

Socket.IO closes a connection whose frame is over its 1 MB buffer; `chainlit_door.patches.bound_settings_changes` lets a
new or edited message of that size through without its words, their size in its metadata (`OVERSIZED_MESSAGE`).
A new message is refused by app.py's `on_message`, an edit by ui/edits.py before anything of the chat changes: the
message keeps its words and the chat stays as it was.
"""

import chainlit as cl
from chainlit_door.patches import OVERSIZED_MESSAGE

from ui.words import say


def size_of(message: dict | None) -> int | None:
    """The bytes of a message that came without its words, or None for a message that came whole."""
    metadata = (message or {}).get("metadata") if isinstance(message, dict) else None
    size = metadata.get(OVERSIZED_MESSAGE) if isinstance(metadata, dict) else None
    return size if isinstance(size, int) else None


async def refuse(size: int) -> None:
    await cl.ErrorMessage(content=say("message.oversized", mb=size / 1e6), author="system").send()
