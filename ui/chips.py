"""The chips beside the message box, each declared once: its name, its icon, its handler, whether it acts at once,
whether text typed beside it is a question too. From this table come app.py's dispatch of a message, the commands
Chainlit shows, the names public/status-chip.js presses Send for (GET /chips, web/chips_route.py) and the keys of
their words (`command.<name>` and `command.<name>.tip` in each language of ui/words/).

A chip is named in the chat's language (Chainlit shows a command's id on its chip), so a message names it by its name
in any language. Every chip also has a slash command, its English name in lower case (`/status`, `/keys`), matched
the same way for all: typed first in a message, alone or followed by a space and the rest of the message, in any
case; the rest is then what was typed beside the chip (`/keys new laptop` is the Keys chip with `new laptop`).
"""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import chainlit as cl

from chainlit_door import sessions as door
from ui import chat_files, keys, library, start_line, text, usage
from ui.words import in_every_language, say


async def _status(engine, layer, message) -> None:
    status = engine.status()
    await cl.Message(content=text.status_text(status, start_line.line(status.state)), author="system",
                     type=text.TABLE).send()


async def _export(engine, layer, message) -> None:
    await chat_files.export(engine, layer)


async def _library(engine, layer, message) -> None:
    await library.on_command(layer, message)


async def _usage(engine, layer, message) -> None:
    await usage.on_command(engine, layer)


@dataclass(frozen=True)
class Chip:
    """One chip: what Chainlit shows, what a message naming it runs, and how the page and the dispatch treat it."""

    name: str  # in English: the key of its words, its slash command, what the app knows it by
    icon: str  # a Lucide icon's name, as Chainlit draws it
    handle: Callable[..., Awaitable[None]]  # (engine, history layer, message): does what the chip is for
    at_once: bool  # pressed, the message goes at once (nothing need be typed): the page presses Send
    asks_too: bool = False  # text typed beside it is a question as well, answered after the chip's own answer

    @property
    def slash(self) -> str:
        return f"/{self.name.lower()}"


CHIPS = (
    Chip("Status", "gauge", _status, at_once=True, asks_too=True),
    Chip("Export", "download", _export, at_once=True, asks_too=True),  # ui/chat_files.py
    Chip("Import", "upload", chat_files.import_chat, at_once=True),  # with nothing attached it offers an upload box
    Chip("Library", "library", _library, at_once=True),  # ui/library.py
    Chip("Keys", "key", keys.on_command, at_once=True),  # ui/keys.py
    Chip("Usage", "activity", _usage, at_once=True, asks_too=True),  # ui/usage.py
)
BY_NAME = {chip.name: chip for chip in CHIPS}


def shown() -> list[dict]:
    """The chips as Chainlit's commands, named and described in the chat's language."""
    return [{"id": say(f"command.{chip.name}"), "icon": chip.icon, "description": say(f"command.{chip.name}.tip"),
             "button": True} for chip in CHIPS]


async def offer() -> None:
    """Show the chips beside this chat's message box."""
    await door.emitter().set_commands(shown())


def named(shown_name: str | None) -> Chip | None:
    """The chip whose name, in any language, is `shown_name` (the command a pressed chip sends)."""
    return next((chip for chip in CHIPS if shown_name in in_every_language(f"command.{chip.name}")), None)


def at_once_names() -> list[str]:
    """The name in every language of each chip that acts at once: the ids the page presses Send for."""
    return [name for chip in CHIPS if chip.at_once for name in in_every_language(f"command.{chip.name}")]


def chosen(message) -> Chip | None:
    """The chip `message` names, pressed or typed as its slash command, or None. The message is left as the chip
    sees it: its command the chip's English name, its content what was typed beside the chip."""
    first, *rest = (message.content or "").strip().split(maxsplit=1) or [""]
    typed = next((chip for chip in CHIPS if first.lower() == chip.slash), None)
    chip = named(message.command) or typed
    if chip is None:
        return None
    if typed is chip:  # a chip pressed beside its own slash command is the chip once
        message.content = rest[0] if rest else ""
    message.command = chip.name
    return chip


async def dispatch(engine, layer, message) -> bool:
    """Run the chip `message` names, if any. True when the chip answered the whole message; False when there is
    no chip, or text typed beside a chip that asks too: the model answers that text."""
    chip = chosen(message)
    if chip is None:
        return False
    await chip.handle(engine, layer, message)
    return not (chip.asks_too and message.content.strip())

