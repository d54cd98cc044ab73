"""An engine that meets the contract (engine/backend.py) without a model, for the UI's fast tests: fixed deltas,
then Stats; it can be told to block, to fail before or during a reply, or to refuse a start. The contract suite
(tests/test_contract.py) holds it to the same behaviour as the two real backends.
"""

import asyncio

from engine.admission import API, CHAT, LOCAL, Admission
from engine.errors import ChatError
from engine.reports import Stats, Status


class FakeEngine:
    presets_locked = None
    serves_api = False
    asleep_since = None
    max_model_len = 4096

    def __init__(self, settings):
        self.settings = settings
        self.preset_name, self.preset = "cpu", None
        self.started, self.starting, self.failure = True, False, None
        self.refuse_start: ChatError | None = None  # set: the next start fails with it
        self.switched: list[str] = []
        self.aborted: list[str] = []
        self.block = asyncio.Event()  # cleared: the reply waits after each delta
        self.block.set()
        self.error = self.error_mid_reply = None
        self.finish: str | None = None  # how a reply that was not aborted ends: "stop" unless set ("length")
        self.seen: list[list[dict]] = []
        self.deltas = ["Hello", " there", ", friend."]
        self._admission = Admission()
        self._active: set[str] = set()

    @property
    def ready(self) -> bool:
        return self.started

    @property
    def state(self) -> str:
        return "ready" if self.ready else "failed" if self.failure else "stopped"

    @property
    def api_sequences(self) -> int:
        return self._admission.held(API)

    def admit(self, who: str, sequences: int = 1, kind: str = CHAT):
        return self._admission.admit(who, sequences, kind)

    async def ensure_started(self, progress=None, retry: bool = False) -> None:
        if self.ready:
            return
        if self.refuse_start is not None:
            self.failure = self.refuse_start
            raise self.refuse_start
        self.started, self.failure = True, None

    def saturated(self, user: str | None = None) -> bool:
        return False

    def status(self) -> Status:
        return Status(self.state, "cpu", "No GPU", "CPU (2 cores)", 4096, None, 1.5, 0.01, 0, 0,
                      chat_requests=self._admission.held(CHAT), api_sequences=self.api_sequences)

    async def stream(self, messages, sampling=None, system_prompt=None, request_id=None, continue_reply=False,
                     user=None):
        await self.ensure_started()
        self.seen.append(messages)
        if self.error:
            raise self.error
        async with self.admit(user or LOCAL, 1, CHAT):
            self._active.add(request_id)
            try:
                written = 0
                for delta in self.deltas:
                    if request_id not in self._active:
                        break
                    yield delta
                    written += 1
                    if self.error_mid_reply:
                        raise self.error_mid_reply
                    await self.block.wait()
                finish = (self.finish or "stop") if request_id in self._active else "abort"
            finally:
                self._active.discard(request_id)
        yield Stats(0.012, 321.0, 30, written, 16, finish, 0, 0.05)

    def stopped_stats(self, request_id: str) -> Stats | None:
        return None

    async def abort(self, request_id: str) -> None:
        self.aborted.append(request_id)
        self._active.discard(request_id)
        self.block.set()

    async def abort_all(self) -> None:
        for request_id in list(self._active):
            await self.abort(request_id)

    async def switch_preset(self, name, progress=None, before_stop=None) -> bool:
        if before_stop:
            await before_stop()
        self.switched.append(name)
        self.preset_name = name
        return True

    async def openai_app(self):
        return None

    def preload(self) -> None:
        """Nothing to import."""

    def expect_stop_on_signals(self) -> None:
        """Nothing runs to stop."""

    def shutdown(self) -> None:
        self.started = False

