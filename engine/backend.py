"""The engine's contract: what app.py, the chat UI and the API gate use of an engine, whichever runs it.

An abstract base class (as vLLM's `EngineClient` is): read-only properties and methods, each abstract unless every
backend does it alike. Three backends meet it: `ChatEngine` (engine/engine.py, vLLM embedded in this process),
`RemoteEngine` (engine/remote.py, a running vLLM server over HTTP) and the tests' fake (harness/fake_engine.py);
`shared_engine()` picks one at start from the settings, and nothing above engine/ asks which. A backend keeps its
state private (underscored) behind the properties: only the backend changes it, as it starts, switches and sleeps.
A backend says what it allows instead of what it is: `presets_locked` (why presets cannot be switched, or None) and
`serves_api` (whether the chat server can serve the OpenAI API from it). Written once here: the settings and the
admission's delegation (`admit`, `admission`, the counts the status reads). tests/test_backend.py checks the
members, tests/test_contract.py their behaviour on every backend.
"""

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager

from engine import presets
from engine.admission import API, CHAT, Admission
from engine.reports import ProgressCallback, Stats, Status
from engine.settings import Sampling, Settings


# What an engine does now (`Backend.state`). While it is one of CHANGING, a reply waits for it (the chat tools
# refuse with a reason, the API answers 503 after a while).
STATES = ("stopped", "starting", "ready", "switching", "falling asleep", "asleep", "waking", "failed", "unreachable")
CHANGING = frozenset({"starting", "switching", "waking"})


class Backend(ABC):
    def __init__(self, settings: Settings, admission: Admission):
        """`admission`: the backend's one admission of chats and API requests, with its rules (engine/admission.py)."""
        self._settings = settings
        self._admission = admission

    # ---- written once: the settings and the admission ------------------------------
    @property
    def settings(self) -> Settings:
        return self._settings

    def admit(self, who: str, sequences: int = 1, kind: str = CHAT) -> AbstractAsyncContextManager:
        """`async with engine.admit(who, n, kind) as ticket`: the one way a chat's reply (kind CHAT, n 1) or an API
        request (API, its prompts times its n) of user `who` holds the engine's sequences while it runs, after
        waiting for the user's share: what `saturated()`, the idle timer and the status count, and the priority
        (`ticket.priority`) the request gets from the engine (engine/admission.py)."""
        return self._admission.admit(who, sequences, kind)

    @property
    def admission(self) -> Admission:
        """The admission, read for the status panel, the benchmarks and tests: who holds and who waits."""
        return self._admission

    @property
    def api_sequences(self) -> int:
        """Sequences the OpenAI-compatible API has in flight (admitted by api/gate.py)."""
        return self._admission.held(API)

    @property
    def chat_requests(self) -> int:
        """Chat replies in flight."""
        return self._admission.held(CHAT)

    # ---- each backend's own --------------------------------------------------------
    @property
    @abstractmethod
    def preset_name(self) -> str:
        """The preset that runs (or will), as the sidebar shows it."""

    @property
    @abstractmethod
    def preset(self) -> presets.Preset | None:
        """Its values once started; None for a remote server."""

    @property
    @abstractmethod
    def presets_locked(self) -> str | None:
        """Why presets cannot be switched here, or None."""

    @property
    @abstractmethod
    def serves_api(self) -> bool:
        """Whether the chat server serves the OpenAI API from this engine."""

    @property
    @abstractmethod
    def state(self) -> str:
        """One of STATES; "unreachable" is a remote server's "failed"."""

    @property
    @abstractmethod
    def ready(self) -> bool:
        """Whether a reply starts now (the state is "ready")."""

    @property
    @abstractmethod
    def max_model_len(self) -> int | None:
        """The context, in tokens, once known (started or connected); else None."""

    @abstractmethod
    async def ensure_started(self, progress: ProgressCallback | None = None, retry: bool = False) -> None:
        """Start (or connect) unless running; concurrent callers share one attempt. Raises a ChatError.

        A failed start of the embedded engine is remembered and raised at once until `retry` (starting again
        would fail the same way and cost a minute); a remote server is asked again at every call, `retry` or
        not, since it may have come up meanwhile."""

    @abstractmethod
    def stream(self, messages: list[dict], sampling: Sampling | None = None, system_prompt: str | None = None,
               request_id: str | None = None, continue_reply: bool = False,
               user: str | None = None) -> AsyncIterator[str | Stats]:
        """The reply's text deltas, then one `Stats`; closing the stream aborts the request. `continue_reply`: the
        messages end with a partial reply, which the model goes on writing (engine.chat's continuation). `user`:
        whose chat it is, admitted as theirs (None: the local user)."""

    @abstractmethod
    async def abort(self, request_id: str) -> None:
        """Stop one request; its stream ends with finish reason 'abort'."""

    @abstractmethod
    def stopped_stats(self, request_id: str) -> Stats | None:
        """What a reply stopped by its chat (its stream cancelled) cost up to the stop, read once; None where the
        backend cannot tell (a remote server tells a reply's usage only at its end)."""

    @abstractmethod
    async def count_tokens(self, text: str) -> int | None:
        """The model's tokens in `text` (a draft in the message box), by its own tokenizer, without running the
        model; None before the engine has a tokenizer (not started) or where it cannot be asked."""

    @abstractmethod
    def saturated(self, user: str | None = None) -> bool:
        """True when a new request of `user` (None: the local user) would wait for a free sequence slot."""

    @abstractmethod
    async def switch_preset(self, name: str, progress: ProgressCallback | None = None,
                            before_stop: Callable[[], Awaitable[None]] | None = None) -> bool:
        """Run preset `name` instead; False when it runs already. Raises a ChatError saying why not."""

    @abstractmethod
    def status(self) -> Status:
        """What runs where, and how busy it is; never starts anything."""

    @abstractmethod
    async def openai_app(self):
        """vLLM's OpenAI app (an ASGI app) over this engine, started first, where `serves_api`; else None."""

    @abstractmethod
    def preload(self) -> None:
        """Prepare what the first start needs (imports); runs in a thread at server start."""

    @abstractmethod
    def expect_stop_on_signals(self) -> None:
        """From Ctrl-C or SIGTERM on, the engine's end is the stop the user asked for, not a crash."""

    @abstractmethod
    def shutdown(self) -> None:
        """Stop whatever this process started for the engine; safe to call often, from any thread."""
