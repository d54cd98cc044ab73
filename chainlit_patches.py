"""Where this app changes Chainlit (2.12.0) from the outside, each change in one place, with why.

- **Engine modules pinned across `-w` reloads** (`restore_engine_modules`, `pin_engine_modules`): `chainlit run -w`
  drops every project module from `sys.modules` and runs app.py again on each save. The engine keeps running
  through that, and what it yields and raises are instances of the classes of its first import: a second copy
  of engine/ would make `except ChatError` and `isinstance(item, Stats)` miss them. So app.py puts the
  first-loaded engine modules back before importing them; edits to engine/ take effect at the next restart.
- **No 1 ms pause per message and step** (`drop_constructor_pauses`): Chainlit's `Message` and `Step`
  constructors call `time.sleep(0.001)` so that two steps made one after the other get different `created_at`
  stamps. They are made on the server's one event loop, which carries every chat's stream and vLLM's output
  handler, so each message would hold all of them, and many messages sent together add up. The stamps are
  `datetime.now()` in microseconds, which differ anyway between two steps, so the pause buys nothing here.
- **A longer ping timeout** (`tolerate_quiet_servers`): Socket.IO drops a connection when the browser has not
  answered a ping within 20 s. Where vLLM runs on the same few CPU cores as the web server, a busy machine's
  timers can stand still longer than that (docs/benchmarks.md), which would cost healthy chats their replies. A
  closed tab is still noticed at once (its socket closes); only a connection lost without a word (a laptop gone
  to sleep) is noticed later.
- **Socket handlers wrapped** (`wrap_socket_handler`): ui/reconnect.py and ui/sessions.py run code after
  Chainlit's own `connection_successful` and `connect`.

Nothing here imports the engine or ui/: it must be importable before app.py has put the engine modules back.
tests/test_chainlit_patches.py fails when a Chainlit upgrade changes what these patches rely on.
"""

import importlib
import sys
import time
import types

from runtime import kept

CHAINLIT_VERSION = "2.12.0"  # the version these patches were written against (and tested on)
PING_TIMEOUT_S = 120  # a server quiet for this long (less the 25 s ping interval) still keeps its chats
PAUSING_MODULES = ("chainlit.message", "chainlit.step")  # the only users of Chainlit's constructor pause


def _pinned() -> dict:
    return kept("engine_modules", dict)


def restore_engine_modules() -> None:
    """Put the first-loaded engine modules back into `sys.modules` (a no-op on the first load)."""
    for name, module in _pinned().items():
        sys.modules.setdefault(name, module)


def pin_engine_modules() -> None:
    """Remember the engine modules loaded now, for the next `-w` reload to reuse."""
    pinned = _pinned()
    pinned.clear()
    pinned.update({name: module for name, module in sys.modules.items()
                   if name == "engine" or name.startswith("engine.")})


def _clock_without_pause() -> types.SimpleNamespace:
    clock = types.SimpleNamespace(**{name: getattr(time, name) for name in dir(time) if not name.startswith("_")})
    clock.sleep = lambda seconds: None
    return clock


def drop_constructor_pauses() -> None:
    """Chainlit's message and step modules get a `time` whose `sleep` returns at once (only they use it)."""
    clock = _clock_without_pause()
    for name in PAUSING_MODULES:  # `chainlit.step` the attribute is the decorator: import the module by name
        importlib.import_module(name).time = clock


def tolerate_quiet_servers() -> None:
    """Chainlit's socket server announces (and applies) the longer ping timeout to every new connection."""
    from chainlit.server import sio

    sio.eio.ping_timeout = PING_TIMEOUT_S


def wrap_socket_handler(event: str, wrap) -> None:
    """Replace Chainlit's socket handler of `event` by `wrap(chainlit_handler)`; a `-w` reload wraps Chainlit's
    own again, never the wrapper of the previous load."""
    from chainlit.server import sio

    handlers = sio.handlers["/"]
    original = getattr(handlers[event], "chainlit_handler", handlers[event])
    wrapped = wrap(original)
    wrapped.chainlit_handler = original
    handlers[event] = wrapped
