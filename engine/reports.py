"""What the engine reports: start-up progress, the cost of one reply (and the clock that measures it), and
its own status.

Plain records, so the UI can show them without knowing anything about vLLM.
"""

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Progress:
    stage: str
    elapsed_s: float
    done: bool = False
    notice: str = ""  # what the user should know about the start (e.g. which preset `auto` chose)


ProgressCallback = Callable[[Progress], Awaitable[None] | None]


@dataclass(frozen=True)
class Cut:
    """An attachment whose text was cut to fit the context: how much of it went in, how many tokens did not."""

    index: int  # its place among the message's attachments
    name: str
    kept_chars: int  # the start of its text that went into the prompt
    left_out_tokens: int
    total_tokens: int


@dataclass(frozen=True)
class Stats:
    """What one reply cost; the last item a stream yields."""

    ttft_s: float | None
    decode_tokens_per_s: float | None
    prompt_tokens: int
    generated_tokens: int
    cached_tokens: int
    finish_reason: str | None  # "stop", "length", "abort"
    dropped_messages: int
    total_s: float
    max_tokens: int = 0  # the reply's limit that applied: what was asked, or less when the context was short
    context_full: bool = False  # the limit came from the context, not from 'max new tokens'
    max_model_len: int = 0
    cut: tuple[Cut, ...] = ()  # attachments of the question that were cut to fit the context


class ReplyClock:
    """Times one reply as it streams, and turns what it cost into its `Stats` (the same for both backends)."""

    def __init__(self):
        self.began = time.perf_counter()
        self.first: float | None = None
        self.last: float | None = None

    def arrived(self, tokens: bool = True) -> None:
        """A piece of the reply came (`tokens`: it held tokens, so the first token is here at the latest)."""
        self.last = time.perf_counter()
        if self.first is None and tokens:
            self.first = self.last

    def stats(self, prompt, asked_tokens: int, generated: int, cached: int, finish: str | None, max_model_len: int,
              prompt_tokens: int | None = None) -> Stats:
        """The reply's `Stats`; `prompt` is engine.chat's Prompt it answered, `asked_tokens` the reply limit asked."""
        decode_s = (self.last - self.first) if self.first is not None and self.last is not None else 0.0
        return Stats(
            ttft_s=None if self.first is None else self.first - self.began,
            decode_tokens_per_s=(generated - 1) / decode_s if decode_s > 0 and generated > 1 else None,
            prompt_tokens=len(prompt.token_ids) if prompt_tokens is None else prompt_tokens,
            generated_tokens=generated, cached_tokens=cached, finish_reason=finish or "abort",
            dropped_messages=prompt.dropped_messages, total_s=time.perf_counter() - self.began,
            max_tokens=prompt.max_tokens, context_full=prompt.max_tokens < asked_tokens,
            max_model_len=max_model_len, cut=prompt.cut,
        )


@dataclass(frozen=True)
class Status:
    state: str  # one of engine.backend.STATES
    preset: str
    purpose: str
    device: str
    max_model_len: int | None
    needs_gib: float | None  # what the preset takes on the device, by engine.sizing
    memory_used_gib: float | None
    kv_cache_usage: float | None  # fraction of the KV cache in use
    requests_running: int
    requests_waiting: int
    chat_requests: int = 0  # in flight, by where they came from; a chat's request is one sequence
    api_sequences: int = 0  # an API request runs a sequence per prompt and choice (prompts x n)
    asleep_since: float | None = None  # when the idle engine fell asleep (seconds since the epoch)
    user_share: int | None = None  # the most sequences one user runs at once (engine/admission.py); None: no share
    waiting_for_share: int = 0  # requests waiting because their user already runs their share
    problem: str = ""  # why the engine is not running when it failed: the start's error, what happened and what to do
