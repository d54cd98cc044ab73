"""The words the app writes, in the language the chat's browser asks for: English, or Simplified Chinese.

Chainlit's own texts (its buttons, the input's placeholder, "Untitled Conversation") follow the browser through
.chainlit/translations; these are the app's. Each text is a pair (English, Chinese) under a key, in one table per
area of the app (the modules beside this one); `say` picks the chat's language, falling back to English for any
other language and outside a chat (the log, the tests of the texts themselves). Placeholders are `str.format`'s
named fields, the same in both languages (tests/test_words.py checks that).
"""

import functools
import re
import string

import chainlit as cl

from ui.words import chat, errors, library, settings, team

TEXTS: dict[str, tuple[str, str]] = {**chat.TEXTS, **settings.TEXTS, **library.TEXTS, **errors.TEXTS, **team.TEXTS}
ENGLISH, CHINESE = "en", "zh"


def language(code: str | None = None) -> str:
    """CHINESE for a browser that asks for Chinese (Chainlit reads the first language of its Accept-Language into
    the session), else ENGLISH; `code`: a language given outright (the starters' request carries its own)."""
    if code is None:
        try:
            code = cl.context.session.language
        except Exception:  # outside a chat: no session to ask
            code = None
    return CHINESE if (code or "").lower().startswith("zh") else ENGLISH


GPU_MEMORY, MEMORY = "显存", "内存"  # a GPU's memory, and a computer's
_on_processor = [False]


def on_processor(cpu: bool) -> None:
    """Whether the engine runs on the processor (boot/wiring.py says so at start): its Chinese then calls the memory
    内存, never a GPU's 显存 (English says "memory" for both)."""
    _on_processor[0] = cpu


def say(key: str, lang: str | None = None, **values) -> str:
    """The text under `key` in the chat's language (or `lang`'s), its placeholders filled from `values`."""
    english, chinese = TEXTS[key]
    if language(lang) != CHINESE:
        return english.format(**values)
    return (chinese.replace(GPU_MEMORY, MEMORY) if _on_processor[0] else chinese).format(**values)


def say_known(key: str, fallback: str, **values) -> str:
    """`say(key)` when there is such a key, else `fallback` as it is: for texts that come from elsewhere (an engine
    stage, a custom preset's purpose) of which only the known ones are translated."""
    return say(key, **values) if key in TEXTS else fallback


def command(shown: str | None) -> str | None:
    """The command a chip sent, by its English name: a chip is named in the chat's language (Chainlit shows the
    command's id on it), so the app knows it under either name."""
    for name in chat.COMMANDS:
        if shown in TEXTS[f"command.{name}"]:
            return name
    return shown


def again(prefix: str, text: str, lang: str | None = None) -> str:
    """`text`, written in English elsewhere (the engine's errors and progress), in the chat's language: the Chinese
    of the first text under `prefix` whose English it fits, filled with the values found in it; as it is when it
    fits none, or the chat is in English (`lang`: a language given outright)."""
    if language(lang) != CHINESE:
        return text
    for pattern, chinese in _templates(prefix):
        found = pattern.fullmatch(text)
        if found:
            return chinese.format(**found.groupdict())
    return text


@functools.cache
def _templates(prefix: str) -> list[tuple[re.Pattern, str]]:
    """Each English text under `prefix` as a pattern whose placeholders catch what stands in their place."""
    made = []
    for key, (english, chinese) in TEXTS.items():
        if key.startswith(prefix):
            pattern, seen = "", set()
            for literal, name, _, _ in string.Formatter().parse(english):
                pattern += re.escape(literal)
                if name is not None:
                    pattern += f"(?P={name})" if name in seen else f"(?P<{name}>.+?)"
                    seen.add(name)
            made.append((re.compile(pattern, re.DOTALL), chinese))
    return made


def error_text(error: Exception, lang: str | None = None) -> str:
    """An engine's error in the chat's language (ui/words/errors.py), or as the engine wrote it."""
    return again("error.", str(error), lang)
