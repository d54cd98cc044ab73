"""Chainlit's 1 ms pause in every message and step it makes, taken off the event loop.

Chainlit's `Message` and `Step` constructors call `time.sleep(0.001)`, so that two steps made one
after the other get different `created_at` timestamps (a step takes its time when it is made). Chainlit makes a `Message` for each user message
and a `Step` around each `on_message` call, on the server's one event loop, which also carries every
other chat's stream and vLLM's output handler: each message holds all of them for over 2 ms, and 32
messages sent together for 70 ms (the time to first token of every chat among them grows by that).
The timestamps are `datetime.now()` in microseconds, which differ anyway between two steps (making one
takes tens of microseconds), so the pause buys nothing here.
"""

import importlib
import time
import types


def _clock_without_pause() -> types.SimpleNamespace:
    clock = types.SimpleNamespace(**{name: getattr(time, name) for name in dir(time) if not name.startswith("_")})
    clock.sleep = lambda seconds: None
    return clock


def drop_constructor_pauses() -> None:
    """Chainlit's message and step modules get a `time` whose `sleep` returns at once (only they use it)."""
    clock = _clock_without_pause()
    for name in ("chainlit.message", "chainlit.step"):  # `chainlit.step` the attribute is the decorator
        importlib.import_module(name).time = clock
