"""What lives as long as the process: the one holder that Chainlit's `-w` re-imports do not replace.

`chainlit run -w` drops every project module from `sys.modules` and runs app.py again on each save. The
running engine, its output tail, the pinned engine modules, the port check and the API gate must outlive
that, so each is kept here by name. This module sits outside the packages on purpose: importing it must not
import `engine` before app.py has put the first-loaded engine modules back.
"""

import sys
import types
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

RUNTIME = sys.modules.setdefault("ernie_chat_runtime", types.ModuleType("ernie_chat_runtime"))


def kept(name: str, make: Callable[[], T]) -> T:
    """The process's one `name`, made by `make()` on first use and returned as it is after every reload."""
    if name not in RUNTIME.__dict__:
        setattr(RUNTIME, name, make())
    return getattr(RUNTIME, name)
