"""Start-up progress, reported to everyone waiting for the start.

The start runs in the task of the first caller; each report runs in the context of the caller
that asked for it instead, so a UI that finds its chat through a context variable (Chainlit
does) updates that chat, not the first one.
"""

import asyncio
import contextvars
import logging
import time

from engine.reports import Progress, ProgressCallback

log = logging.getLogger("engine")


class ProgressReports:
    def __init__(self):
        self._listeners: dict[ProgressCallback, contextvars.Context] = {}

    def add(self, callback: ProgressCallback | None) -> None:
        if callback:
            self._listeners[callback] = contextvars.copy_context()

    def remove(self, callback: ProgressCallback | None) -> None:
        self._listeners.pop(callback, None)

    async def emit(self, stage: str, since: float, done: bool = False, notice: str = "") -> None:
        event = Progress(stage, time.monotonic() - since, done, notice)
        for callback, context in list(self._listeners.items()):
            try:
                result = context.run(callback, event)
                if asyncio.iscoroutine(result):
                    await asyncio.get_running_loop().create_task(result, context=context)
            except Exception:
                log.exception("progress callback failed")
