"""The door in front of the OpenAI-compatible API: the key, the body's size, `n`, and the engine's state.

vLLM's app (engine/openai_app.py) answers the protocol once a request is let through. This gate
decides first, so that a missing key is a 401, an oversized body a 413, and an engine that is
starting, switching presets or restarting makes a request wait up to `api_wait_s` and then get a
503 with Retry-After: never a hang, never a 500. It also counts the API requests in flight, for
the status panel. A plain ASGI app, so any web server can route to it.
"""

import asyncio
import hmac
import json
import logging

from engine.errors import ChatError
from engine.openai_app import build_openai_app

log = logging.getLogger("engine")
MAX_BODY_BYTES = 4 * 1024 * 1024  # far above the longest prompt a preset's context holds
RETRY_AFTER_S = 10


class ApiGate:
    def __init__(self, engine):
        self.engine = engine
        self._app = None
        self._app_client = None  # the engine instance `_app` was built for
        self._building = asyncio.Lock()

    async def __call__(self, scope, receive, send) -> None:
        if await _refused(self.engine, scope, send):
            return
        body = await _read_body(receive)
        if body is None:
            return await _error(send, 413, f"The request body is larger than {MAX_BODY_BYTES // 2**20} MiB; "
                                           "send a shorter prompt.", "RequestTooLarge")
        problem = self._check(body)
        if problem is not None:
            return await _error(send, 400, problem, "BadRequestError", "n")
        try:
            app = await asyncio.wait_for(self._served_app(), self.engine.settings.api_wait_s)
        except (TimeoutError, asyncio.TimeoutError):
            return await _error(send, 503, "The model engine is starting or switching presets; try again in a few "
                                           "seconds.", "ServiceUnavailable", retry_after=True)
        except ChatError as error:  # the start failed: trying again will not help until it is fixed
            return await _error(send, 503, str(error), "ServiceUnavailable")
        except Exception as error:  # vLLM's serving app could not be built (a broken install)
            log.exception("the OpenAI-compatible API could not be set up")
            return await _error(send, 500, f"The API could not be set up ({type(error).__name__}: {error}). The "
                                           "server log has the details; check that vLLM is installed completely.",
                                "InternalServerError")
        self.engine.api_running += 1
        try:
            await app(scope, _replay(body, receive), send)
        finally:
            self.engine.api_running -= 1

    def _check(self, body: bytes) -> str | None:
        """What vLLM does not bound: `n` copies of a reply, each taking a sequence slot of the engine."""
        try:
            n = json.loads(body).get("n") if body else None
        except (ValueError, AttributeError):
            return None  # not a JSON object: vLLM's own validation answers it
        slots = self.engine.preset.max_num_seqs if self.engine.preset else 1
        if isinstance(n, int) and not isinstance(n, bool) and not 1 <= n <= slots:
            return f"n must be in [1, {slots}] (the engine's sequence slots), got {n}."
        return None

    async def _served_app(self):
        """vLLM's app for the running engine, starting the engine first when it does not run."""
        await self.engine.ensure_started()
        async with self._building:
            client = self.engine.client
            if client is None:  # it stopped again meanwhile (a switch): wait for the next one
                await self.engine.ensure_started()
                client = self.engine.client
            if self._app_client is not client:
                self._app = await build_openai_app(client, self.engine.settings.model, self.engine.stop_ids)
                self._app_client = client
                log.info("OpenAI-compatible API ready at /v1 for %s", self.engine.settings.model)
            return self._app


def metrics_app(engine):
    """vLLM's Prometheus metrics of this process's engine, as `vllm serve` serves them at /metrics, behind the
    API's key. Reading them never starts the engine: before its first start there are none."""
    from prometheus_client import make_asgi_app
    from vllm.v1.metrics.prometheus import get_prometheus_registry

    exposition = make_asgi_app(get_prometheus_registry())

    async def metrics(scope, receive, send) -> None:
        if not await _refused(engine, scope, send):
            await exposition(scope, receive, send)

    return metrics


async def _refused(engine, scope, send) -> bool:
    """Answer 401 and say so when the server has an API key and the request does not carry it."""
    key = engine.settings.api_key
    if key is None or _authorized(scope, key.get_secret_value()):
        return False
    await _error(send, 401, "Missing or wrong API key: send it as 'Authorization: Bearer <key>' "
                            "(the server's CHAT_API_KEY).", "AuthenticationError")
    return True


def _authorized(scope, key: str) -> bool:
    headers = dict(scope.get("headers") or [])
    given = headers.get(b"authorization", b"").decode("latin-1")
    return hmac.compare_digest(given.encode(), f"Bearer {key}".encode())


async def _read_body(receive) -> bytes | None:
    """The whole request body, or None once it passes MAX_BODY_BYTES (the rest is not read)."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive):
    """A `receive` that hands vLLM the body already read, then the client's own events (its disconnect)."""
    sent = False

    async def replayed():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


async def _error(send, status: int, message: str, kind: str, param: str | None = None,
                 retry_after: bool = False) -> None:
    """An error in the OpenAI API's JSON shape, as vLLM's own errors are."""
    body = json.dumps({"error": {"message": message, "type": kind, "param": param, "code": status}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if retry_after:
        headers.append((b"retry-after", str(RETRY_AFTER_S).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def shared_gate(engine) -> ApiGate:
    """The process's gate, kept across `-w` re-imports with the engine it serves (and the app it built)."""
    from engine.engine import RUNTIME

    gate = getattr(RUNTIME, "api_gate", None)
    if gate is None or gate.engine is not engine:
        gate = RUNTIME.api_gate = ApiGate(engine)
    return gate
