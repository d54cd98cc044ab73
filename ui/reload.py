"""Keeping the engine package across Chainlit's `-w` reloads.

On every save, `chainlit run -w` drops each project module from sys.modules and runs app.py
again. The engine keeps running through that, and what it yields and raises are instances of
the classes of its first import: a second copy of engine/ would make `except ChatError` and
`isinstance(item, Stats)` miss them. So app.py puts the first-loaded engine modules back before
importing them. Edits to engine/ take effect at the next restart, as the running engine needs.
"""

import sys
import types

_HOLDER = sys.modules.setdefault("ernie_chat_pinned_modules", types.ModuleType("ernie_chat_pinned_modules"))


def restore_engine_modules() -> None:
    for name, module in getattr(_HOLDER, "modules", {}).items():
        sys.modules.setdefault(name, module)


def pin_engine_modules() -> None:
    _HOLDER.modules = {name: module for name, module in sys.modules.items()
                       if name == "engine" or name.startswith("engine.")}
