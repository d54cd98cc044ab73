"""The door in front of the OpenAI-compatible API: the key, the body's size, the sequences asked, the engine's state.

vLLM's app (`engine.openai_app()`, engine/openai_app.py) answers the protocol once a request is let through. This gate
decides first, so that a missing or wrong key is a 401 (whose key it is: api/callers.py), an oversized body a
413, a body that is not JSON or nests absurdly deep a 400 in the API's error shape (never a 500 from deeper
down), a request for more sequences than the engine has slots a 400, and an engine that is starting, switching
presets or restarting makes a request wait up to `api_wait_s` and then get a 503 with Retry-After: never a
hang, never a 500. A request's sequences are its prompts times its `n`, read with vLLM's own
request models (so "40" and 40.0 count as 40, as vLLM will run them), against the preset that runs
or that the first start will pick. It admits the API's sequences through the engine's one admission
(`engine.admit`, engine/admission.py), as the chats' replies are admitted, as its user (api/callers.py's answer,
engine/who.py's `Who`, which its ticket carries): the user's share of the engine and the priority vLLM
gives the request are the admission's. A plain ASGI app, so any web server can route to it.
"""

import asyncio
import json
import logging
from dataclasses import dataclass

from api import library_field
from api.callers import Callers, Refusal
from engine import build, presets, startup
from engine.admission import API
from engine.errors import ChatError
from engine.who import THE_OPERATOR, serving
from engine.openai_app import CHAT_PATH, COMPLETIONS_PATH, request_models
from lifetime.runtime import RUNTIME
from web.asgi import read_body, replay
from web.listen import chosen_port, is_loopback

log = logging.getLogger("engine")
MAX_BODY_BYTES = 4 * 1024 * 1024  # far above the longest prompt a preset's context holds
SMALL_BODY_BYTES = 64 * 1024  # parsed on the event loop; a larger body off it
MAX_DEPTH = 100  # how deep a request's JSON may nest: far below Python's recursion limit, far above real requests
RETRY_AFTER_S = 10


class BodyRefused(Exception):
    """A request body that is not a request at all; the text says why and what to send."""


@dataclass(frozen=True)
class Cost:
    """The sequences one request asks of the engine: each prompt runs `per_prompt` of them (`n`, or a larger
    `best_of` where vLLM has one)."""

    prompts: int
    per_prompt: int
    field: str = "n"

    @property
    def sequences(self) -> int:
        return self.prompts * self.per_prompt

    def too_many(self, slots: int | None) -> str | None:
        """Why an engine of `slots` sequence slots cannot run it, or None when it fits (or `slots` is unknown)."""
        if slots is None or self.sequences <= slots:
            return None
        what = f"{self.field}={self.per_prompt}" if self.prompts == 1 else \
            f"{self.prompts} prompts x {self.field}={self.per_prompt}"
        fix = f"a smaller {self.field}" if self.prompts == 1 else f"fewer prompts or a smaller {self.field}"
        return (f"This request asks for {self.sequences} sequences ({what}); the engine has {slots} sequence "
                f"slots: send {fix}.")


class ApiGate:
    def __init__(self, engine):
        self.engine = engine
        self._models: dict | None = None  # vLLM's request models by path, imported on first use
        self.library_layer = None  # the history's data layer, where the `library` field reads (api/library_field.py)
        self.callers = Callers(engine.settings, is_loopback(chosen_port()[0]))  # who sends it (api/callers.py)

    def use_library(self, layer) -> None:
        """The history's `layer`, where users' keys and libraries are."""
        self.library_layer = layer
        self.callers.use_keys(layer)

    async def __call__(self, scope, receive, send) -> None:
        try:
            asking = await self.callers.check(scope)
        except Refusal as refusal:
            return await _error(send, refusal.status, refusal.message, refusal.kind, retry_after=refusal.retry_after)
        body = await read_body(receive, MAX_BODY_BYTES)
        if body is None:
            return await _error(send, 413, f"The request body is larger than {MAX_BODY_BYTES // 2**20} MiB; "
                                           "send a shorter prompt.", "RequestTooLarge")
        path = scope.get("path", "").rstrip("/")
        request, sources = None, None
        if path in (CHAT_PATH, COMPLETIONS_PATH):
            try:  # a large body is walked in a thread: its Python-level depth check then shares the loop
                request = parsed(body) if len(body) <= SMALL_BODY_BYTES else await asyncio.to_thread(parsed, body)
            except BodyRefused as why:
                return await _error(send, 400, str(why), "BadRequestError")
        if path == CHAT_PATH and isinstance(request, dict) and library_field.FIELD in request:
            user = None if asking is THE_OPERATOR else asking.name  # the operator's key has no library
            try:
                sources = await library_field.apply(request, self.library_layer, user)
            except library_field.FieldRefused as why:
                return await _error(send, 400, str(why), "BadRequestError", library_field.FIELD)
            body = json.dumps(request).encode()
        try:
            cost = await self._cost(path, request)
            problem = cost and cost.too_many(await self._slots())
            if not problem:
                app = await asyncio.wait_for(self.engine.openai_app(), self.engine.settings.api_wait_s)
                problem = cost and cost.too_many(self.engine.preset.max_num_seqs)  # the preset that did start
        except (TimeoutError, asyncio.TimeoutError):
            return await _error(send, 503, "The model engine is starting or switching presets; try again in a few "
                                           "seconds.", "ServiceUnavailable", retry_after=True)
        except ChatError as error:  # the start failed: trying again will not help until it is fixed
            return await _error(send, 503, str(error), "ServiceUnavailable")
        except Exception as error:  # vLLM's serving app or request models could not be loaded (a broken install)
            log.exception("the OpenAI-compatible API could not be set up")
            return await _error(send, 500, f"The API could not be set up ({type(error).__name__}: {error}). The "
                                           "server log has the details; check that vLLM is installed completely.",
                                "InternalServerError")
        if problem:
            return await _error(send, 400, problem, "BadRequestError", cost.field)
        async with self.engine.admit(asking, cost.sequences if cost else 0, API) as ticket:
            with serving(ticket):  # its caller, its priority, its tokens noted on it and counted at the end
                await app(scope, replay(body, receive), send if sources is None else _with_sources(send, sources))

    async def _cost(self, path: str, request) -> Cost | None:
        """What the parsed `request` to `path` asks of the engine; None when it generates nothing (/v1/models)."""
        if request is None:
            return None
        if self._models is None:  # importing vLLM takes seconds: not on the event loop
            self._models = await asyncio.to_thread(request_models)
        return request_cost(self._models[path], request)

    async def _slots(self) -> int | None:
        """The sequence slots of the running preset, or of the one the next start will pick (None: it will fail)."""
        preset = self.engine.preset or await asyncio.to_thread(planned_preset, self.engine)
        return preset.max_num_seqs if preset else None


def parsed(body: bytes):
    """The JSON value of a request `body` that generates text. Raises BodyRefused, saying why, for a body that is
    not JSON or nests deeper than `MAX_DEPTH` (vLLM would parse it again further down the stack, where a depth
    that passed here can still exhaust Python's recursion: a 500)."""
    too_deep = BodyRefused(f"The request body's JSON nests more than {MAX_DEPTH} levels deep; a request, its JSON "
                           "schemas included, rarely needs 20: send the fields as the OpenAI API describes them.")
    try:
        value = json.loads(body)
    except RecursionError:
        raise too_deep from None
    except ValueError as error:  # also text that is not UTF-8
        reason = error.msg if isinstance(error, json.JSONDecodeError) else "it is not UTF-8 text"
        raise BodyRefused(f"The request body is not JSON ({reason}): send a JSON object, as the OpenAI API "
                          "describes.") from None
    if _deeper_than(value, MAX_DEPTH):
        raise too_deep
    return value


def _deeper_than(value, most: int) -> bool:
    """Whether `value` nests lists and objects more than `most` deep; walks the containers level by level, without
    recursion."""
    level = [value] if isinstance(value, (list, dict)) else []
    for _ in range(most):
        level = [item for container in level for item in (container.values() if isinstance(container, dict)
                                                           else container) if isinstance(item, (list, dict))]
        if not level:
            return False
    return True


def request_cost(model, request) -> Cost | None:
    """The sequences a parsed JSON `request` asks for, read by vLLM's request `model` as vLLM will read it ("40"
    and 40.0 are n=40); None when vLLM will refuse the request itself (n of 0, "40.5", an empty prompt)."""
    try:
        request = model.model_validate(request)
    except Exception:  # vLLM's own validation answers it, in its own words
        return None
    fields = type(request).model_fields
    n = 1 if request.n is None else request.n  # the chat's n may be null: vLLM runs one
    best_of = request.best_of if "best_of" in fields else None  # sent to a vLLM without it, it is ignored
    prompts = _prompts(request.prompt) + _prompts(request.prompt_embeds) if "prompt" in fields else 1
    if n < 1 or prompts < 1:
        return None
    return Cost(prompts, best_of, "best_of") if best_of is not None and best_of > n else Cost(prompts, n)


def _prompts(prompt) -> int:
    """How many prompts a completion's `prompt` (or `prompt_embeds`) holds: a string or a list of token ids is
    one, a list of strings or of token-id lists is one each (as vLLM's `prompt_to_seq` splits them)."""
    if prompt is None:
        return 0
    if isinstance(prompt, (str, bytes)) or (prompt and all(isinstance(t, int) for t in prompt)):
        return 1
    return len(prompt)


def planned_preset(engine) -> presets.Preset | None:
    """The preset the engine runs, or the one its next start will pick (`startup.plan_device`, the start's own
    choice without its model checks); None when that start cannot succeed. Reads NVML: call off the loop."""
    if engine.preset is not None:
        return engine.preset
    try:
        return startup.plan_device(engine.preset_name, engine.settings).preset
    except ChatError:
        return None


def metrics_app(engine):
    """vLLM's Prometheus metrics of this process's engine, as `vllm serve` serves them at /metrics, behind the
    API's key. Reading them never starts the engine: before its first start there are none.

    vLLM's registry is imported on the first read, not here: this runs while app.py loads, and importing vLLM
    then would keep the page from answering until the import is done (docs/benchmarks.md has how long)."""
    exposition = None

    async def metrics(scope, receive, send) -> None:
        nonlocal exposition
        try:
            shared_gate(engine).callers.operator(scope)
        except Refusal as refusal:
            return await _error(send, refusal.status, refusal.message, refusal.kind)
        if exposition is None:
            exposition = await asyncio.to_thread(_exposition)
        await exposition(scope, receive, send)

    return metrics


def _exposition():
    with build.IMPORTS:
        from prometheus_client import make_asgi_app
        from vllm.v1.metrics.prometheus import get_prometheus_registry
    return make_asgi_app(get_prometheus_registry())


async def _error(send, status: int, message: str, kind: str, param: str | None = None,
                 retry_after: bool | int = False) -> None:
    """An error in the OpenAI API's JSON shape, as vLLM's own errors are."""
    body = json.dumps({"error": {"message": message, "type": kind, "param": param, "code": status}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if retry_after:  # True: the engine's usual wait
        headers.append((b"retry-after", str(RETRY_AFTER_S if retry_after is True else retry_after).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _with_sources(send, sources: "library_field.Sources"):
    """`send` with the library's sources as the response's `X-Library-Sources` header (percent-encoded UTF-8), and
    in its body: a JSON answer's top level, or a stream's first chunk, gets `sources.fields()` (OpenAI clients keep
    unknown fields, and hide headers). A JSON answer is held until its last part to be rewritten whole."""
    from urllib.parse import quote

    state = {"json": False, "held": b"", "first_chunk": True}

    async def sending(message) -> None:
        if message["type"] == "http.response.start":
            value = quote(sources.header(), safe=" [],;:.").encode("latin-1")
            headers = [(name, value) for name, value in message.get("headers", []) if name != b"content-length"]
            state["json"] = dict(headers).get(b"content-type", b"").startswith(b"application/json")
            message = {**message, "headers": [*headers, *([(b"x-library-sources", value)] if value else [])]}
        elif message["type"] == "http.response.body" and state["json"]:
            state["held"] += message.get("body", b"")
            if message.get("more_body"):
                return
            message = {**message, "body": _added(state["held"], sources.fields())}
        elif message["type"] == "http.response.body" and state["first_chunk"] and message.get("body", b""). \
                startswith(b"data: {"):
            state["first_chunk"] = False
            line, _, rest = message["body"].partition(b"\n")
            message = {**message, "body": b"data: " + _added(line[6:], sources.fields()) + b"\n" + rest}
        await send(message)

    return sending


def _added(body: bytes, fields: dict) -> bytes:
    """A JSON object's bytes with `fields` added at its top level; anything else as it came."""
    try:
        answer = json.loads(body)
    except ValueError:
        return body
    return json.dumps({**answer, **fields}).encode() if isinstance(answer, dict) else body


def shared_gate(engine) -> ApiGate:
    """The process's gate, kept across `-w` re-imports with the engine it serves (and the app it built)."""
    gate = getattr(RUNTIME, "api_gate", None)
    if gate is None or gate.engine is not engine:
        gate = RUNTIME.api_gate = ApiGate(engine)
    return gate
