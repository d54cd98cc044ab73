"""An edited question (Chainlit's pencil): the turns after it go, kept as a branch of the question (ui/branches.py),
and its new text takes the old one's place, only once the engine takes the edited question's request. A refused
edit (the text does not fit the context, a file is refused, the engine fails, a message over the socket's 1 MB)
leaves the question, the turns after it and the stored chat as they were: the page had already dropped those
turns, so they are shown again.

Chainlit's own edit handler removes every later message from the page and the history, and stores the new text,
before the app sees the edit; this one replaces it (`chainlit_door.patches.wrap_socket_handler`) and leaves those
changes to `take`, which ui/reply.py calls when the engine takes the request.
"""

from dataclasses import dataclass

import chainlit as cl
from chainlit_door.sessions import enter, rerun_message, session_of_socket, shown_messages, wrap_socket_handler

from history.writes import show_and_store
from ui import branches, oversized


@dataclass
class Edit:
    """An edit not yet taken: the question, its text before, and the messages after it."""

    question: cl.Message
    text_before: str
    later: list[cl.Message]
    turns_before: list[dict]  # the chat's turns as they were


def handle_edits(current_chat) -> None:
    """Edits go through this module from now on; `current_chat()` gives the chat of the context (ui/chat_state.py)."""
    wrap_socket_handler("edit_message", lambda chainlit_handler: _handler(current_chat))


def _handler(current_chat):
    async def edit_message(sid, payload):
        session = session_of_socket(sid)
        message = payload.get("message") if isinstance(payload, dict) else None
        if session is None or not isinstance(message, dict):
            return
        enter(session)
        if (size := oversized.size_of(message)) is not None:
            await oversized.refuse(size)
            return
        shown = shown_messages()
        index = next((i for i, m in enumerate(shown) if m.id == message.get("id")), None)
        text = message.get("output")
        if index is None or not isinstance(text, str):
            return
        chat = await current_chat()
        question = shown[index]
        edit = Edit(question, question.content, shown[index + 1:], list(chat.turns))
        chat.edit, question.content = edit, text
        try:
            await rerun_message(question)
        finally:
            if getattr(chat, "edit", None) is edit:  # never taken: the chat as it was
                await put_back(chat)
    return edit_message


async def take(chat, layer) -> None:
    """The engine took the edited question's request: its new text is stored, with the question as it was and the
    turns after it kept as a branch in its metadata (ui/branches.py), and those turns leave the page and the
    history."""
    edit = getattr(chat, "edit", None)
    if edit is None:
        return
    chat.edit = None
    await branches.keep(edit.question, edit.text_before, edit.later)
    await show_and_store(edit.question, layer)  # the branch kept before its messages go
    for message in edit.later:
        await message.remove()


async def put_back(chat) -> None:
    """An edit refused: the question's text, the turns after it and the chat's turns as they were (nothing of them
    was removed from the history)."""
    edit = getattr(chat, "edit", None)
    if edit is None:
        return
    chat.edit = None
    edit.question.content = edit.text_before
    chat.restore_turns(edit.turns_before)
    await edit.question.send()
    for message in edit.later:
        await message.send()
