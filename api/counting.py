"""The tokens of each API request, noted on its admission's ticket (engine/admission.py) as vLLM's OpenAI serving
produces them, so that usage counts API requests as it counts chats: when the admission releases the request.

vLLM's serving calls its engine client's `generate` once per prompt; the client here wraps it and reads each
output as it passes: the prompt's tokens, the cached part of them, and every choice's reply tokens (a stream's
deltas added up, a whole reply taken as it is). The ticket is found through a context variable that the gate sets
around vLLM's app: its handlers run in the gate's task, and `generate` is called there. A request cut off early
counts what it had produced.
"""

import contextlib
from contextvars import ContextVar

_TICKET: ContextVar = ContextVar("api_ticket", default=None)


@contextlib.contextmanager
def counted(ticket):
    """What vLLM's app generates inside this block is noted on `ticket`."""
    token = _TICKET.set(ticket)
    try:
        yield
    finally:
        _TICKET.reset(token)


class _Counting:
    """vLLM's engine client as its OpenAI serving uses it, each request's tokens noted on its ticket."""

    counts_usage = True

    def __init__(self, client):
        self._client = client

    def generate(self, prompt, sampling_params, *args, **kwargs):
        stream = self._client.generate(prompt, sampling_params, *args, **kwargs)
        ticket = _TICKET.get()
        return stream if ticket is None else _noted(stream, ticket, sampling_params)

    def __getattr__(self, name):
        return getattr(self._client, name)


async def _noted(stream, ticket, sampling_params):
    kind = getattr(sampling_params, "output_kind", None)  # vLLM's RequestOutputKind
    delta = getattr(kind, "name", None) == "DELTA"
    replies: dict[int, int] = {}  # choice index -> its reply tokens so far
    prompt = cached = 0
    try:
        async for out in stream:
            prompt = len(out.prompt_token_ids or ()) or prompt
            cached = out.num_cached_tokens or cached
            for choice in out.outputs:
                tokens = len(choice.token_ids)
                replies[choice.index] = replies.get(choice.index, 0) + tokens if delta else tokens
            yield out
    finally:
        ticket.prompt += prompt
        ticket.cached += cached
        ticket.reply += sum(replies.values())


def install(app) -> None:
    """Count the requests of vLLM's `app` (once per app: a preset switch builds a new one)."""
    for name in ("openai_serving_chat", "openai_serving_completion"):
        serving = getattr(app.state, name, None)
        if serving is not None and not getattr(serving.engine_client, "counts_usage", False):
            serving.engine_client = _Counting(serving.engine_client)
