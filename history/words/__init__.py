"""The notices the history writes into a chat itself (the note that ends a reply cut off, a write refused, a
database that fails), in the chat's language: one table per language (en.py, zh.py, named by the language's code),
with the same keys and placeholders as English.

history/ sits below ui/, so it cannot use ui/words/; its few notices are an area of their own, with a module per
language as ui/words/ has a folder per language (tests/test_words.py checks that both know the same languages).
The writer passes the chat's language; any other language, and no chat, get English.
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
