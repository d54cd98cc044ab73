"""An engine that meets the contract (engine/backend.py) without a model, for the UI's fast tests: fixed deltas,
then Stats; it can be told to block, to fail before or during a reply, or to refuse a start. The contract suite
(tests/test_contract.py) holds it to the same behaviour as the two real backends.

Its contract state is private like every backend's; what a test tells it is in its constructor (started or not, a
start it refuses, the deltas) and in its controls below (`block`, `error`, `error_mid_reply`, `finish`, `deltas`),
and what it saw is in `seen`, `switched` and `aborted`.
"""

import asyncio

from engine import presets
from engine.admission import CHAT, Admission
from engine.who import LOCAL
from engine.backend import Backend
from engine.errors import ChatError
from engine.reports import Stats, Status


class FakeEngine(Backend):
    def __init__(self, settings, started: bool = True, refuse_start: ChatError | None = None,
                 deltas: list[str] | None = None):
        """`started`: ready from the first moment; `refuse_start`: every start fails with it."""
        super().__init__(settings, Admission())
        self._preset_name = "cpu"
        self._started, self._failure = started, None
        self._refuse_start = refuse_start
        self._active: set[str] = set()
        # the controls
        self.block = asyncio.Event()  # cleared: the reply waits after each delta
        self.block.set()
        self.error = self.error_mid_reply = None
        self.finish: str | None = None  # how a reply that was not aborted ends: "stop" unless set ("length")
        self.deltas = list(deltas) if deltas is not None else ["Hello", " there", ", friend."]
        # what it saw
        self.seen: list[list[dict]] = []
        self.switched: list[str] = []
        self.aborted: list[str] = []

    @property
    def presets_locked(self) -> str | None:
        return None

    @property
    def serves_api(self) -> bool:
        return False

    @property
    def preset_name(self) -> str:
        return self._preset_name

    @property
    def preset(self) -> None:
        return None

    @property
    def asleep_since(self) -> None:
        return None

    @property
    def max_model_len(self) -> int:
        return 4096

    @property
    def failure(self) -> ChatError | None:
        return self._failure

    @property
    def ready(self) -> bool:
        return self._started

    @property
    def state(self) -> str:
        return "ready" if self.ready else "failed" if self._failure else "stopped"

    async def ensure_started(self, progress=None, retry: bool = False) -> None:
        if self.ready:
            return
        if self._refuse_start is not None:
            self._failure = self._refuse_start
            raise self._refuse_start
        self._started, self._failure = True, None

    async def count_tokens(self, text: str) -> int | None:
        return len(text.split()) if self._started else None  # a word a token, as its replies are

    def saturated(self, user: str | None = None) -> bool:
        return False

    def status(self) -> Status:
        return Status(self.state, "cpu", "No GPU", "CPU (2 cores)", 4096, None, 1.5, 0.01, 0, 0,
                      chat_requests=self.chat_requests, api_sequences=self.api_sequences)

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
        return None  # as a remote server, it cannot tell what a stopped reply cost

    async def abort(self, request_id: str) -> None:
        self.aborted.append(request_id)
        self._active.discard(request_id)
        self.block.set()

    async def abort_all(self) -> None:
        for request_id in list(self._active):
            await self.abort(request_id)

    async def switch_preset(self, name, progress=None, before_stop=None) -> bool:
        presets.lookup(name, self.settings.custom_preset)  # an unknown name is refused, as by the embedded engine
        if name == self._preset_name:
            return False
        if before_stop:
            await before_stop()
        self.switched.append(name)
        self._preset_name = name
        return True

    async def openai_app(self):
        return None

    def preload(self) -> None:
        """Nothing to import."""

    def expect_stop_on_signals(self) -> None:
        """Nothing runs to stop."""

    def shutdown(self) -> None:
        self._started = False
