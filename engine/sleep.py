"""The embedded engine asleep and awake: a part of `ChatEngine` (engine/engine.py), kept apart to keep that short.

The idle timer (engine/idle.py) calls `fall_asleep`; a request to a sleeping engine finds it not `ready`, and
its `ensure_started` wakes it through the one single-flight start (`ChatEngine._start_locked`), so the chat's
start note and the API's wait apply to a wake as to a start.
"""

import logging
import time

log = logging.getLogger("engine")
# vLLM's sleep level for an idle GPU engine: 1 moves the weights to CPU memory and drops the KV cache, so waking
# copies 0.72 GB back; 2 would drop the weights too and read them from disk again (docs/benchmarks.md, "Idle").
SLEEP_LEVEL = 1


class SleepAndWake:
    def _busy(self) -> bool:
        return self._admission.held() > 0 or self.starting or not self.ready

    async def fall_asleep(self) -> bool:
        """Give the device back while nobody chats (the idle timer asks); False when a request or a start came
        meanwhile. A GPU engine sleeps in vLLM's sleep mode; a CPU engine, which has none, stops."""
        async with self._lock:
            if self._busy() or self.closing:
                return False
            self.asleep_since = time.time()  # from here on a request waits for the wake (`ready` is False)
            self._falling_asleep = True
            try:
                if self._sleeps_on_device():
                    await self._llm.sleep(SLEEP_LEVEL)
                else:
                    await self._stop_engine()
            finally:
                self._falling_asleep = False
            log.info("the engine sleeps after %.1f idle minutes (%s)", self.settings.idle_minutes,
                     "its memory given back" if self._llm is not None else "stopped: it starts with the next message")
            return True

    def _sleeps_on_device(self) -> bool:
        return self._llm is not None and self.device is not None and self.device.kind == "cuda"

    async def _wake(self) -> None:
        """Bring a sleeping engine back; the lock is held. A GPU engine whose memory another program took meanwhile
        is stopped and started anew, so the start says in plain words what it needs and what is free."""
        began = time.monotonic()
        if not self._sleeps_on_device():  # stopped on the CPU: a start with the same preset
            await self._launch(self.preset_name, waking=True)
            return
        self.starting = True
        try:
            await self._progress.emit("Waking the engine", began)
            try:
                await self._llm.wake_up()
            except Exception as error:
                log.warning("waking the engine failed (%s: %s); starting it anew", type(error).__name__, error)
                await self._stop_engine()
                self.starting = False
                await self._launch(self.preset_name, waking=True)
                return
            self.asleep_since = None
            self._idle.start()
            await self._progress.emit("Ready", began, done=True)
            log.info("engine awake in %.2f s", time.monotonic() - began)
        finally:
            self.starting = False

