"""The notices the history writes into a chat itself (the note that ends a reply cut off, a write refused, a
database that fails), in the chat's language: one table per language (en.py, zh.py, named by the language's code),
with the same keys and placeholders as English.

history/ sits below ui/, so it cannot use ui/words/; its few notices are an area of their own, with a module per
language as ui/words/ has a folder per language (tests/test_words.py checks that both know the same languages).
The writer passes the chat's language; any other language, and no chat, get English. What the history refuses
(an import file) or leaves out is said with a key and values (`Said`, `Refusal`): its text is the English one, for
the log and for a caller without a chat, and ui/ says it in the chat's language with `in_language`.
"""

import importlib
import pkgutil

TABLES = {found.name: importlib.import_module(f"history.words.{found.name}").TEXTS
          for found in pkgutil.iter_modules(__path__)}


def language(code: str | None) -> str:
    """The language of TABLES whose code begins `code` ("zh-CN" is zh), else English."""
    asked = (code or "").lower().replace("_", "-").split("-")[0]
    return asked if asked in TABLES else "en"


def say(key: str, code: str | None, **values) -> str:
    """The notice under `key` in the language `code` names (the chat's, as Chainlit read it from the browser; None
    outside a chat), filled from `values`."""
    return TABLES[language(code)][key].format(**values)


class Said(str):
    """A text of these tables as its English (a plain `str` to whoever logs or compares it) that keeps its key and
    values, so a chat in another language can say it in its own."""

    def __new__(cls, key: str, **values):
        said = super().__new__(cls, say(key, None, **values))
        said.key, said.values = key, values
        return said

    def in_language(self, code: str | None) -> str:
        """The same text in the language `code` names (the chat's)."""
        return say(self.key, code, **self.values)


class Refusal(ValueError):
    """Something the history will not take, said by a key of these tables and its values: `str()` is the English,
    `in_language(code)` the chat's."""

    def __init__(self, key: str, **values):
        self.said = Said(key, **values)
        super().__init__(self.said)

    def in_language(self, code: str | None) -> str:
        return self.said.in_language(code)
