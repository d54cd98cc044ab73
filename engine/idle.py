"""When nobody chats: the engine is put to sleep after `CHAT_IDLE_MINUTES` with no reply streaming and no API request.

The timer belongs to the engine, not to a hook: it counts from the end of the last request (a chat's reply or an
API call, whichever ended last) and asks the engine to sleep (`ChatEngine.fall_asleep`), which refuses when
something began meanwhile. What sleeping means is the engine's: on a GPU vLLM's sleep mode gives the memory
back; on the CPU, where there is none, the engine stops and the next message starts it again.
"""

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

log = logging.getLogger("engine")
MAX_CHECK_EVERY_S = 5.0


class IdleTimer:
    def __init__(self, minutes: float, busy: Callable[[], bool], fall_asleep: Callable[[], Awaitable[bool]]):
        self.idle_s = minutes * 60
        self._busy, self._fall_asleep = busy, fall_asleep
        self._last = time.monotonic()
        self._task: asyncio.Task | None = None

    def touch(self) -> None:
        """Something happened just now (a request began or ended): the idle time starts again."""
        self._last = time.monotonic()

    def start(self) -> None:
        """Watch from now on (in the event loop; once: later calls keep the running watch)."""
        self.touch()
        if self.idle_s > 0 and (self._task is None or self._task.done()):
            self._task = asyncio.get_running_loop().create_task(self._watch(), name="idle-timer")

    async def _watch(self) -> None:
        check_every = min(self.idle_s / 4, MAX_CHECK_EVERY_S)
        while True:
            await asyncio.sleep(check_every)
            if self._busy():
                self.touch()
            elif time.monotonic() - self._last >= self.idle_s:
                try:
                    await self._fall_asleep()
                except Exception:
                    log.exception("putting the idle engine to sleep failed; it stays awake")
                self.touch()
