"""The words the app writes, in the language the chat's browser asks for: English, Simplified Chinese, or any
language given a folder here.

Chainlit's own texts (its buttons, the input's placeholder, "Untitled Conversation") follow the browser through
.chainlit/translations; these are the app's. Each language is a folder (en/, zh/) holding one table per area of the
app ({key: text}), the same areas and keys in each: a third language is one file per area, in a folder named by its
language code (and history/words/, whose notices the history writes itself). `say` picks the chat's language,
falling back to English for any other language and outside a chat (the log, the tests of the texts themselves), and
to the English text of a key a language lacks. Placeholders are `str.format`'s named fields, the same in every
language (tests/test_words.py checks that).
"""

import functools
import importlib
import re
import string
from pathlib import Path

from chainlit_door import sessions as door

AREAS = ("chat", "settings", "library", "errors", "team")
ENGLISH, CHINESE = "en", "zh"
LANGUAGES = (ENGLISH, *sorted(folder.name for folder in Path(__file__).parent.iterdir()
                              if (folder / "chat.py").is_file() and folder.name != ENGLISH))


def _table(lang: str) -> dict[str, str]:
    """One language's texts, its areas' tables together."""
    table = {}
    for area in AREAS:
        table.update(importlib.import_module(f"ui.words.{lang}.{area}").TEXTS)
    return table


TABLES: dict[str, dict[str, str]] = {lang: _table(lang) for lang in LANGUAGES}
TEXTS = TABLES[ENGLISH]  # every key the app says


def language(code: str | None = None) -> str:
    """The language of LANGUAGES whose code begins the browser's (Chainlit reads the first language of its
    Accept-Language into the session: "zh-CN" and "zh-TW" are both zh), else ENGLISH; `code`: a language given
    outright (the starters' request carries its own)."""
    if code is None:
        code = door.language()  # None outside a chat
    asked = (code or "").lower().replace("_", "-").split("-")[0]
    return asked if asked in TABLES else ENGLISH


GPU_MEMORY, MEMORY = "显存", "内存"  # a GPU's memory, and a computer's
_on_processor = [False]


def on_processor(cpu: bool) -> None:
    """Whether the engine runs on the processor (boot/wiring.py says so at start): its Chinese then calls the memory
    内存, never a GPU's 显存 (English says "memory" for both)."""
    _on_processor[0] = cpu


def _text(key: str, lang: str) -> str:
    """The text under `key` in `lang` (one of LANGUAGES), unfilled; English where `lang` lacks it."""
    text = TABLES[lang].get(key, TEXTS[key])
    return text.replace(GPU_MEMORY, MEMORY) if lang == CHINESE and _on_processor[0] else text


def say(key: str, lang: str | None = None, **values) -> str:
    """The text under `key` in the chat's language (or `lang`'s), its placeholders filled from `values`."""
    return _text(key, language(lang)).format(**values)


def say_known(key: str, fallback: str, **values) -> str:
    """`say(key)` when there is such a key, else `fallback` as it is: for texts that come from elsewhere (an engine
    stage, a custom preset's purpose) of which only the known ones are translated."""
    return say(key, **values) if key in TEXTS else fallback


def in_every_language(key: str) -> tuple[str, ...]:
    """The text under `key` in each language, English first, each once: for words a user types (a chip's name, the
    `new` of a key), understood whatever the chat's language."""
    return tuple(dict.fromkeys(_text(key, lang) for lang in LANGUAGES))


def again(prefix: str, text: str, lang: str | None = None) -> str:
    """`text`, written in English elsewhere (the engine's errors and progress), in the chat's language: the
    translation of the first text under `prefix` whose English it fits, filled with the values found in it; as it
    is when it fits none, or the chat is in English (`lang`: a language given outright)."""
    lang = language(lang)
    if lang == ENGLISH:
        return text
    for key, pattern in _templates(prefix):
        found = pattern.fullmatch(text)
        if found:
            return _text(key, lang).format(**found.groupdict())
    return text


@functools.cache
def _templates(prefix: str) -> list[tuple[str, re.Pattern]]:
    """Each English text under `prefix`, by its key, as a pattern whose placeholders catch what stands in their
    place."""
    made = []
    for key, english in TEXTS.items():
        if key.startswith(prefix):
            pattern, seen = "", set()
            for literal, name, _, _ in string.Formatter().parse(english):
                pattern += re.escape(literal)
                if name is not None:
                    pattern += f"(?P={name})" if name in seen else f"(?P<{name}>.+?)"
                    seen.add(name)
            made.append((key, re.compile(pattern, re.DOTALL)))
    return made


def error_text(error: Exception, lang: str | None = None) -> str:
    """An engine's error in the chat's language (ui/words/<language>/errors.py), or as the engine wrote it."""
    return again("error.", str(error), lang)
