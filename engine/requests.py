"""The embedded engine's request path: one chat reply from its messages to vLLM and back as deltas and one `Stats`.

`ChatEngine` (engine/engine.py) decides whether the engine runs; `ChatRequests` runs a reply on what runs
(a `VllmHost`, engine/hosting.py): it is admitted as its user's (engine/admission.py) from the first moment, its
prompt is rendered and tokenized off the event loop (engine/chat.py), vLLM's `SamplingParams` are made from the
chat's sampling (engine/sampling.py, top p by the engine's processor: engine/top_p.py), and the deltas stream
back. It keeps the chats' request ids (to abort them one by one) and what a stopped reply cost until its chat
reads it (`stopped_stats`).
"""

import asyncio
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor

from engine.admission import CHAT, Admission
from engine.who import LOCAL
from engine.chat import build_prompt
from engine.errors import EngineDiedError
from engine.reports import ReplyClock, Stats
from engine.sampling import engine_values
from engine.settings import Sampling

# Prompts are rendered and tokenized off the event loop (the whole chat, per message: a fifth of the chat
# server's time with 32 multi-turn chats), in one thread: a tokenizer used by two threads at once can fail
# with "Already borrowed".
PROMPTS = ThreadPoolExecutor(max_workers=1, thread_name_prefix="prompts")
STOPPED_KEPT = 64  # stopped replies' costs kept for their chats to read: a chat gone meanwhile never reads its own


class ChatRequests:
    def __init__(self, admission: Admission, engine_died: Callable[[], None]):
        """`engine_died`: called when a reply failed because the engine itself did (it restarts it)."""
        self._admission = admission
        self._engine_died = engine_died
        self._active: set[str] = set()  # the chats' request ids, to abort them
        self._stopped: dict[str, Stats] = {}  # what stopped chat replies cost, until the chat asks (stopped_stats)

    @property
    def active(self) -> frozenset[str]:
        """The request ids of the chat replies in the engine now."""
        return frozenset(self._active)

    async def generate(self, host, max_model_len: int, messages: list[dict], sampling: Sampling, system: str,
                       request_id: str, continue_reply: bool = False, who: str = LOCAL) -> AsyncIterator[str | Stats]:
        """Yield the reply's text deltas from `host`'s engine, then one `Stats`; closing the stream aborts it."""
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        from engine.top_p import hand_over

        if host is None or host.llm is None:
            raise EngineDiedError("it is not running")
        llm = host.llm
        generated = cached = 0
        finish, clock, prompt = None, None, None
        # from the first moment: `saturated()` must count it while its prompt is built
        async with self._admission.admit(who, 1, CHAT) as used:
            self._active.add(request_id)
            try:
                prompt = await asyncio.get_running_loop().run_in_executor(
                    PROMPTS, build_prompt, host.tokenizer, system, messages, max_model_len,
                    sampling.max_tokens, continue_reply)
                params = hand_over(SamplingParams(  # top p by the engine's processor (engine/top_p.py)
                    **engine_values(sampling), max_tokens=prompt.max_tokens,
                    ignore_eos=sampling.ignore_eos, seed=sampling.seed,
                    stop_token_ids=None if sampling.ignore_eos else host.stop_ids,
                    output_kind=RequestOutputKind.DELTA,
                ), llm)
                clock = ReplyClock()
                used.prompt = len(prompt.token_ids)
                async for out in llm.generate({"prompt_token_ids": prompt.token_ids}, params, request_id,
                                              priority=used.priority):  # a chat before a batch (admission.py)
                    completion = out.outputs[0]
                    generated += len(completion.token_ids)
                    used.reply, used.cached = generated, out.num_cached_tokens or 0  # so far, if it is stopped
                    clock.arrived(tokens=bool(completion.token_ids))
                    if completion.text:
                        yield completion.text
                    if out.finished:
                        finish, cached = completion.finish_reason, out.num_cached_tokens or 0
            except (asyncio.CancelledError, GeneratorExit):
                if clock is not None:  # the cost up to the stop, for the stopped reply's cost line
                    self._stopped = dict(list(self._stopped.items())[-STOPPED_KEPT + 1:])
                    self._stopped[request_id] = clock.stats(prompt, sampling.max_tokens, generated, used.cached,
                                                            "abort", max_model_len)
                await host.abort(request_id)
                raise
            except Exception as error:
                if llm.errored:
                    self._engine_died()
                    raise EngineDiedError(type(error).__name__) from error
                raise
            finally:
                self._active.discard(request_id)
        yield clock.stats(prompt, sampling.max_tokens, generated, cached, finish, max_model_len)

    def stopped_stats(self, request_id: str) -> Stats | None:
        """What the reply of `request_id` cost up to its Stop (once; None when it was not stopped here)."""
        return self._stopped.pop(request_id, None)

    async def abort(self, host, request_id: str) -> None:
        """Stop one chat reply in `host`'s engine; its stream ends with finish reason 'abort'."""
        if host is not None and host.llm is not None and request_id in self._active:
            await host.abort(request_id)
