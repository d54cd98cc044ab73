"""One start at a time, shared by every caller that arrives while it runs.

Both backends start lazily on the first request (the embedded engine builds vLLM; the remote one connects to
its server). Callers that arrive meanwhile join that attempt and each get its progress; a caller that gives up
(its chat closed) does not cancel the attempt for the others.
"""

import asyncio
from collections.abc import Awaitable, Callable

from engine.progress import ProgressReports
from engine.reports import ProgressCallback


class SingleFlight:
    def __init__(self, progress: ProgressReports):
        self.progress = progress
        self._attempt: asyncio.Future | None = None

    @property
    def running(self) -> bool:
        return self._attempt is not None

    async def join(self, attempt: Callable[[], Awaitable[None]], progress: ProgressCallback | None = None) -> None:
        """Run `attempt()` unless one runs already, and wait for it; `progress` hears its reports meanwhile."""
        self.progress.add(progress)
        try:
            if self._attempt is None:
                self._attempt = asyncio.ensure_future(attempt())
                self._attempt.add_done_callback(self._finished)
            await asyncio.shield(self._attempt)
        finally:
            self.progress.remove(progress)

    def _finished(self, attempt: asyncio.Future) -> None:
        self._attempt = None
        if not attempt.cancelled():
            attempt.exception()  # marks it retrieved: every caller has seen it already
