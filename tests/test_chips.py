"""The chips come from one table (ui/chips.py): each is dispatched by its name in every language and by its slash
command, matched the same way for all; each has its words in every language, is offered to Chainlit, and the page
presses Send for those that act at once (GET /chips, public/status-chip.js)."""

import asyncio
import dataclasses
from pathlib import Path

import pytest

from ui import chips, words
from web.chips_route import PATH, chips_route

ROOT = Path(__file__).resolve().parent.parent


@dataclasses.dataclass
class Sent:
    """What Chainlit hands on_message: a command (a pressed chip's shown name), the text and the files."""

    content: str
    command: str | None = None
    elements: list = dataclasses.field(default_factory=list)


@pytest.fixture
def handled(monkeypatch) -> list[tuple[str, str]]:
    """Each chip's handler replaced by one that notes (the chip's name, the text it was given)."""
    seen = []

    def noting(name):
        async def handle(engine, layer, message):
            seen.append((name, message.content))
        return handle

    monkeypatch.setattr(chips, "CHIPS", tuple(dataclasses.replace(chip, handle=noting(chip.name))
                                              for chip in chips.CHIPS))
    return seen


def dispatched(message: Sent) -> bool:
    return asyncio.run(chips.dispatch(None, None, message))


@pytest.mark.parametrize("chip", chips.CHIPS, ids=lambda chip: chip.name)
def test_a_chip_is_dispatched_by_its_name_in_every_language_and_by_its_slash_command(chip, handled):
    for lang in words.LANGUAGES:
        assert dispatched(Sent("", command=words.say(f"command.{chip.name}", lang))), lang
    for typed in (chip.slash, f"  {chip.slash.upper()}  ", f"{chip.slash}\n"):
        assert dispatched(Sent(typed)), typed
    assert handled == [(chip.name, "")] * (len(words.LANGUAGES) + 3)


@pytest.mark.parametrize("chip", chips.CHIPS, ids=lambda chip: chip.name)
def test_text_beside_a_chip_or_after_its_slash_command_is_the_same_and_a_question_where_the_chip_says(chip, handled):
    pressed, typed = Sent("new laptop", command=chip.name), Sent(f"{chip.slash} new laptop")
    assert dispatched(pressed) == dispatched(typed) == (not chip.asks_too)
    assert handled == [(chip.name, "new laptop")] * 2
    assert pressed.command == typed.command == chip.name and typed.content == "new laptop"
    assert dispatched(Sent(f"{chip.slash} ", command=chip.name)) and handled[-1] == (chip.name, ""), "once, not twice"


def test_other_messages_are_no_chip(handled):
    for message in (Sent("/statusx"), Sent("what is /status?"), Sent("/unknown"), Sent("hello"),
                    Sent("hello", command="Something else")):
        assert not dispatched(message) and message.command in (None, "Something else")
    assert handled == []


def test_every_chip_has_its_words_in_every_language_and_a_slash_command_of_its_own():
    for chip in chips.CHIPS:
        for lang in words.LANGUAGES:
            assert words.TABLES[lang][f"command.{chip.name}"] and words.TABLES[lang][f"command.{chip.name}.tip"]
    names = [name for chip in chips.CHIPS for name in words.in_every_language(f"command.{chip.name}")]
    assert len(names) == len(set(names)), "two chips share a name"
    assert len({chip.slash for chip in chips.CHIPS}) == len(chips.CHIPS)
    assert {key.split(".")[1] for key in words.TEXTS if key.startswith("command.")} == set(chips.BY_NAME)


def test_chainlit_is_offered_every_chip_in_the_chats_language():
    offered = chips.shown()
    assert [command["id"] for command in offered] == [words.say(f"command.{chip.name}") for chip in chips.CHIPS]
    assert all(command["icon"] and command["description"] and command["button"] for command in offered)


def test_the_page_is_told_every_chip_that_acts_at_once_in_every_language():
    import json

    body = json.loads(asyncio.run(chips_route().endpoint(user=None)).body)
    expected = {words.say(f"command.{chip.name}", lang) for chip in chips.CHIPS if chip.at_once
                for lang in words.LANGUAGES}
    assert set(body["at_once"]) == expected and {"Status", "状态", "Keys", "密钥"} <= expected
    script = (ROOT / "public" / "status-chip.js").read_text()
    assert f'fetch("{PATH}"' in script and "at_once" in script


def test_app_dispatches_messages_through_the_chip_table_and_offers_the_chips():
    app = (ROOT / "app.py").read_text()
    assert "chips.dispatch(" in app and app.count("chips.offer()") == 2
    assert '"/status"' not in app and '"/keys"' not in app and "_COMMAND" not in app
