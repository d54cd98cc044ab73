"""The engine's contract: what app.py, the chat UI and the API gate use of an engine, whichever runs it.

Two backends meet it: `ChatEngine` (engine/engine.py, vLLM embedded in this process) and `RemoteEngine`
(engine/remote.py, a running vLLM server over HTTP); `shared_engine()` picks one at start from the settings,
and nothing above engine/ asks which. A backend says what it allows instead of what it is: `presets_locked`
(why presets cannot be switched, or None) and `serves_api` (whether the chat server can serve the OpenAI API
from its `client`). tests/test_backend.py checks both against this Protocol.
"""

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Protocol, runtime_checkable

from engine import presets
from engine.reports import ProgressCallback, Stats, Status
from engine.settings import Sampling, Settings


# What an engine does now (`Backend.state`). While it is one of CHANGING, a reply waits for it (the chat tools
# refuse with a reason, the API answers 503 after a while).
STATES = ("stopped", "starting", "ready", "switching", "falling asleep", "asleep", "waking", "failed", "unreachable")
CHANGING = frozenset({"starting", "switching", "waking"})


@runtime_checkable
class Backend(Protocol):
    # Read-only for everything above engine/: a backend changes them itself, as it starts, switches and sleeps.
    @property
    def settings(self) -> Settings: ...

    @property
    def preset_name(self) -> str:
        """The preset that runs (or will), as the sidebar shows it."""

    @property
    def preset(self) -> presets.Preset | None:
        """Its values once started; None for a remote server."""

    @property
    def presets_locked(self) -> str | None:
        """Why presets cannot be switched here, or None."""

    @property
    def serves_api(self) -> bool:
        """Whether the chat server serves the OpenAI API from this engine."""

    @property
    def state(self) -> str:
        """One of STATES; "unreachable" is a remote server's "failed"."""

    @property
    def ready(self) -> bool:
        """Whether a reply starts now (the state is "ready")."""

    @property
    def max_model_len(self) -> int | None: ...

    def admit(self, who: str, sequences: int = 1, kind: str = "chat") -> AbstractAsyncContextManager:
        """`async with engine.admit(who, n, kind) as ticket`: the one way a chat's reply (kind CHAT, n 1) or an API
        request (API, its prompts times its n) of user `who` holds the engine's sequences while it runs, after
        waiting for the user's share: what `saturated()`, the idle timer and the status count, and the priority
        (`ticket.priority`) the request gets from the engine (engine/admission.py)."""

    async def ensure_started(self, progress: ProgressCallback | None = None, retry: bool = False) -> None:
        """Start (or connect) unless running; concurrent callers share one attempt. Raises a ChatError.

        A failed start of the embedded engine is remembered and raised at once until `retry` (starting again
        would fail the same way and cost a minute); a remote server is asked again at every call, `retry` or
        not, since it may have come up meanwhile."""

    def stream(self, messages: list[dict], sampling: Sampling | None = None, system_prompt: str | None = None,
               request_id: str | None = None, continue_reply: bool = False,
               user: str | None = None) -> AsyncIterator[str | Stats]:
        """The reply's text deltas, then one `Stats`; closing the stream aborts the request. `continue_reply`: the
        messages end with a partial reply, which the model goes on writing (engine.chat's continuation). `user`:
        whose chat it is, admitted as theirs (None: the local user)."""

    async def abort(self, request_id: str) -> None:
        """Stop one request; its stream ends with finish reason 'abort'."""

    def stopped_stats(self, request_id: str) -> Stats | None:
        """What a reply stopped by its chat (its stream cancelled) cost up to the stop, read once; None where the
        backend cannot tell (a remote server tells a reply's usage only at its end)."""

    def saturated(self, user: str | None = None) -> bool:
        """True when a new request of `user` (None: the local user) would wait for a free sequence slot."""

    async def switch_preset(self, name: str, progress: ProgressCallback | None = None,
                            before_stop: Callable[[], Awaitable[None]] | None = None) -> bool:
        """Run preset `name` instead; False when it runs already. Raises a ChatError saying why not."""

    def status(self) -> Status:
        """What runs where, and how busy it is; never starts anything."""

    async def openai_app(self):
        """vLLM's OpenAI app (an ASGI app) over this engine, started first, where `serves_api`; else None."""

    def preload(self) -> None:
        """Prepare what the first start needs (imports); runs in a thread at server start."""

    def expect_stop_on_signals(self) -> None:
        """From Ctrl-C or SIGTERM on, the engine's end is the stop the user asked for, not a crash."""

    def shutdown(self) -> None:
        """Stop whatever this process started for the engine; safe to call often, from any thread."""
