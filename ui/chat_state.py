"""A chat's state (its turns and sidebar preferences), made once, on first use, by whichever hook asks first.

Chainlit runs on_chat_start as a task of its own and on_chat_resume inside the socket's connection handler,
while a message or a settings change sent at once runs as yet another task: none may assume that another has
run. The first to ask makes the state (a chat being reopened from its stored thread, read through Chainlit's
own owner check), sends the sidebar, and starts the engine; the others wait for the same making (the chips
are the start and resume hooks' to send, ui/chips.py). The state is kept on Chainlit's session object, which lives
exactly as long as the chat's session: `cl.user_session` is replaced by the thread's stored metadata when Chainlit
reopens a chat.
"""

import asyncio
from dataclasses import dataclass, field

import chainlit as cl

from chainlit_door.sessions import resume
from history.turns import turns_from
from lifetime.tasks import spawn
from ui import attachments, branches, context_fill, my_defaults, reply, sessions, sidebar, start_note, versions
from chainlit_door import sessions as door

STATE = "chat_state"  # kept with the chat's session (chainlit_door.sessions.kept_with)


@dataclass
class ChatState:
    """Everything one open chat holds; nothing of it is in `cl.user_session` (Chainlit stores that with the
    thread), and what the history keeps of the chat is `history.writes.record_of(session)`."""

    turns: list[dict]
    prefs: sidebar.ChatPreferences
    reply: cl.Message | None = None  # the latest reply, sent again to a tab that reconnects
    request_id: str | None = None  # the engine's request while that reply is being written
    waiting: dict | None = None  # a question that waits for the engine's start ("Try again" answers it)
    start: asyncio.Task | None = None  # the engine's start as this chat shows it (ui/start_note.py)
    start_shown: object = None  # that start's note (ui/start_note.py), sent once a message waits for it
    replies: dict[str, cl.Message] = field(default_factory=dict)  # replies with earlier versions, by id
    versions: dict[str, int] = field(default_factory=dict)  # the version shown of a paged reply (ui/versions.py)
    edit: object = None  # an edited question until the engine takes it (ui/edits.py)
    context_used: int = 0  # the tokens the chat takes, from its last reply's cost (ui/context_fill.py)

    @property
    def replying(self) -> bool:
        """Whether the latest reply is still being written."""
        return self.request_id is not None

    # The turns change here only (tests/test_layout.py checks): each writer below names what happened to them.

    def turns_before(self, message_id: str) -> list[dict]:
        """The chat so far; an edited message reruns, so everything from it on is forgotten."""
        for index, turn in enumerate(self.turns):
            if turn.get("id") == message_id:
                del self.turns[index:]
                break
        return self.turns

    def add_exchange(self, asked: dict, answer: dict) -> None:
        """A question and its reply join the chat: a finished reply, or one a refused Continue or Regenerate put
        back."""
        self.turns += [asked, answer]

    def take_last_exchange(self) -> tuple[dict, dict]:
        """The last question and its reply, out of the chat while Continue or Regenerate rewrites the reply (they
        come back with it, or as they were when the engine refuses)."""
        asked, answer = self.turns[-2:]
        del self.turns[-2:]
        return asked, answer

    def restore_turns(self, turns: list[dict]) -> None:
        """The turns as they were before an edit the engine refused (ui/edits.py)."""
        self.turns[:] = turns

    def show_branch(self, leaving: set[str], turns: list[dict]) -> None:
        """Another branch of an edited question is shown (ui/branches.py): the turns from the first of `leaving` (the
        question and the messages shown after it) give way to that branch's `turns`."""
        cut = next((i for i, turn in enumerate(self.turns) if turn.get("id") in leaving), len(self.turns))
        self.turns[cut:] = turns


def made(session=None) -> ChatState | None:
    """The state of this chat (or of `session`'s) if it is already made (without making it)."""
    making = door.kept_with(session or door.session(), STATE)
    return making.result() if making is not None and making.done() and not _failed(making) else None


def _failed(making: asyncio.Future) -> bool:
    """A making that ended without a state (cancelled or raised): the next hook to ask makes it again."""
    return making.done() and (making.cancelled() or making.exception() is not None)


async def current(engine, thread: dict | None = None) -> ChatState:
    """This chat's state; `thread`: the stored chat that on_chat_resume was given, if that is the caller."""
    session = door.session()
    making = door.kept_with(session, STATE)
    if making is None or _failed(making):
        making = spawn(_make(engine, thread))
        door.keep_with(session, STATE, making)
    return await asyncio.shield(making)  # a Stop of one waiting hook must not cancel the making for the others


def forget(session) -> ChatState | None:
    """The next hook to ask makes this chat anew (its thread was deleted); returns the state it forgot."""
    state = made(session)
    door.keep_with(session, STATE, None)
    return state


async def _make(engine, thread: dict | None) -> ChatState:
    session, continued = door.session(), None
    if thread is None and session.thread_id_to_resume:  # a message came before Chainlit reopened the chat
        thread = await resume(session)
    elif thread is None:  # a tab back after a restart goes on in its own thread
        thread = continued = sessions.continued_thread(session)
    if thread is not None:
        state = ChatState(turns_from(thread, await attachments.stored(thread["id"])),
                          sidebar.resumed(session.chat_settings or {}, engine.settings, engine.preset_name))
    else:
        state = ChatState([], await my_defaults.new_chat(sidebar.defaults(engine.settings, engine.preset_name),
                                                         engine.settings))
    await send_sidebar(engine, state.prefs)
    state.reply = None if thread is None else reply.stored(thread, state.turns)
    state.context_used = context_fill.used(reply.stored_stats(state.reply)) if state.reply is not None else 0
    if state.reply is not None:
        await reply.offer_tools(state.reply)
    for kept in [] if thread is None else versions.stored(thread):  # the history keeps them, not their buttons
        await versions.offer(state, state.reply if state.reply is not None and state.reply.id == kept.id else kept)
    if thread is not None:
        await branches.offer_stored(thread)
    if continued is not None:
        await sessions.tell_if_cut_off(continued)
    if not engine.ready:
        spawn(_start_engine(engine, state))  # start now: the first reply waits less
    return state


async def _start_engine(engine, state: ChatState) -> None:
    if await start_note.ensure_engine(engine, state, quiet=True):
        await send_sidebar(engine, state.prefs)  # the slider follows the context that now runs


async def send_sidebar(engine, prefs: sidebar.ChatPreferences) -> None:
    await cl.ChatSettings(sidebar.widgets(engine.settings, prefs, engine.preset, engine.presets_locked,
                                          engine.max_model_len)).send()
