"""A running vLLM server as the engine: the same methods as the embedded `ChatEngine`, over HTTP.

With `CHAT_ENGINE_URL` the app embeds no engine; a `vllm serve` process (one GPU, or a fleet with
data, tensor or pipeline parallelism behind one URL) owns the model and its memory. Replies stream
from its OpenAI API; closing a stream aborts the request there; the model and its context come
from `/v1/models`; the status panel reads its Prometheus `/metrics`; history is trimmed to the
context with its `/tokenize`. While the server is unreachable every message gets a clear error at
once, and a background check notices when it is back.

Shares and priority (engine/admission.py), as far as the server allows: this app's chats are admitted by user,
with a share only where CHAT_USER_SHARE sets one (the server's slots are not known here), and each chat asks for
the chat's priority in its body, which the server honours when started with `--scheduling-policy priority`
(vLLM ignores it otherwise, and an older one that refuses it gets the request again without). The server
answers the API itself, so requests sent to it directly are neither counted nor given a share here.
"""

import asyncio
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator

import httpx

from engine.admission import CHAT, Admission
from engine.who import LOCAL
from engine.backend import Backend
from engine.chat import Prompt, fit_prompt, plain
from engine.errors import ChatError, RemoteEngineError
from engine.progress import ProgressReports
from engine.reports import ProgressCallback, ReplyClock, Stats, Status
from engine.sampling import engine_values
from engine.settings import Sampling, Settings
from engine.single_flight import SingleFlight

log = logging.getLogger("engine")
CHECK_EVERY_S = 2.0  # how often the server's /metrics is read (and, while it is down, how often it is tried)
CONNECT_TIMEOUT_S = 5.0
KEEPALIVE_S = 2.0  # how long an idle connection to the server is kept for the next reply
CONTINUE = {"continue_final_message": True, "add_generation_prompt": False}  # vLLM: go on writing the last reply


class RemoteEngine(Backend):
    def __init__(self, settings: Settings, transport: httpx.MockTransport | None = None):
        """`transport`: where its HTTP requests go instead of the network (a fast test's vLLM server)."""
        super().__init__(settings, Admission(  # the chats' sequences by user (the server answers the API itself)
            share=lambda: settings.share(None), prioritized=settings.fair_share))
        self._transport = transport
        self._url = settings.engine_url.rstrip("/")
        self._root = self._url.removesuffix("/v1")
        self._model: str | None = None
        self._max_model_len: int | None = None
        self._starting, self._failure = False, None
        self._priority_refused = False  # the server refused a request's priority: sent without it since
        self._up = False
        self._gauges: dict[str, float] = {}
        self._active: dict[str, object] = {}  # request id -> its open stream
        self._aborted: set[str] = set()
        self._progress = ProgressReports()
        self._connecting = SingleFlight(self._progress)
        self._watch: asyncio.Task | None = None
        self._closed = False
        key = settings.engine_key.get_secret_value() if settings.engine_key else None
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client: httpx.AsyncClient | None = None

    # ---- what it is now, read-only -------------------------------------------------
    @property
    def presets_locked(self) -> str | None:
        return "The vLLM server owns its memory: its size is chosen where it runs, not here."

    @property
    def serves_api(self) -> bool:
        return False  # the server answers the OpenAI API itself

    @property
    def preset_name(self) -> str:
        return "remote"

    @property
    def preset(self) -> None:
        return None  # the server's size is chosen where it runs

    @property
    def asleep_since(self) -> None:
        return None  # the server owns its memory: it never sleeps on this app's behalf

    @property
    def url(self) -> str:
        """The server's OpenAI API, as CHAT_ENGINE_URL says (…/v1)."""
        return self._url

    @property
    def model(self) -> str | None:
        """The model the server serves, once connected."""
        return self._model

    @property
    def max_model_len(self) -> int | None:
        return self._max_model_len

    @property
    def failure(self) -> ChatError | None:
        """Why the last connection failed, until one succeeds."""
        return self._failure

    @property
    def ready(self) -> bool:
        return self._up and self._model is not None

    @property
    def state(self) -> str:
        return "ready" if self.ready else "starting" if self._starting else "unreachable"

    # ---- connecting ---------------------------------------------------------------
    async def ensure_started(self, progress: ProgressCallback | None = None, retry: bool = False) -> None:
        """Connect unless connected; concurrent callers share one attempt. Raises RemoteEngineError."""
        if self.ready:
            return
        await self._connecting.join(self._connect, progress)

    async def _connect(self) -> None:
        began = time.monotonic()
        self._starting = True
        try:
            await self._progress.emit(f"Connecting to the vLLM server at {self._url}", began)
            await self._read_models()
            self._up, self._failure = True, None
            if self._watch is None or self._watch.done():
                self._watch = asyncio.get_running_loop().create_task(self._keep_watching())
            await self._progress.emit("Ready", began, done=True, notice=f"Serving {self._model} from {self._url}.")
            log.info("using the vLLM server at %s (%s, context %s)", self._url, self._model, self._max_model_len)
        except ChatError as error:
            self._failure = error
            raise
        finally:
            self._starting = False

    async def _read_models(self) -> None:
        try:
            async with httpx.AsyncClient(timeout=CONNECT_TIMEOUT_S, headers=self._headers,
                                         transport=self._transport) as http:
                response = await http.get(f"{self._url}/models")
                response.raise_for_status()
            card = response.json()["data"][0]
        except (httpx.HTTPError, ValueError, KeyError, IndexError) as error:
            self._up = False
            raise RemoteEngineError(self._url, _describe(error)) from error
        self._model, self._max_model_len = card["id"], card.get("max_model_len")

    async def _keep_watching(self) -> None:
        """Read the server's gauges while it answers; while it does not, try it again (no user waits for this)."""
        async with httpx.AsyncClient(timeout=CONNECT_TIMEOUT_S, headers=self._headers,
                                     transport=self._transport) as http:
            while not self._closed:
                try:
                    if not self._up:
                        await self._read_models()
                        log.info("the vLLM server at %s answers again", self._url)
                    response = await http.get(f"{self._root}/metrics")
                    response.raise_for_status()
                    self._gauges, self._up = read_gauges(response.text), True
                except (httpx.HTTPError, ChatError) as error:
                    if self._up:
                        log.warning("the vLLM server at %s stopped answering: %s", self._url, _describe(error))
                    self._up = False
                await asyncio.sleep(CHECK_EVERY_S)

    # ---- requests -----------------------------------------------------------------
    async def stream(self, messages: list[dict], sampling: Sampling | None = None,
                     system_prompt: str | None = None, request_id: str | None = None,
                     continue_reply: bool = False, user: str | None = None) -> AsyncIterator[str | Stats]:
        """Yield the reply's text deltas, then one `Stats`. Closing the stream aborts the request on the server.
        `continue_reply`: the messages end with a partial reply, which the server's template continues. `user`:
        whose chat it is; None is the local user."""
        await self.ensure_started()
        sampling = sampling or self.settings.sampling()
        system = self.settings.system_prompt if system_prompt is None else system_prompt
        request_id = request_id or uuid.uuid4().hex
        async with self.admit(user or LOCAL, 1, CHAT) as used:
            self._active[request_id] = None
            try:
                turns = plain(messages)  # attachments written into their messages
                if surely_fits(_with_system(system, turns), sampling.max_tokens, self._max_model_len):
                    prompt = Prompt([], 0, sampling.max_tokens, messages=tuple(turns))  # no need to ask the server
                else:
                    prompt = await asyncio.to_thread(fit_prompt, self._tokenizer(system, continue_reply), messages,
                                                     self._max_model_len, sampling.max_tokens, continue_reply)
                turns = _with_system(system, list(prompt.messages))
                async for item in self._generate(turns, sampling, prompt, request_id, continue_reply, used.priority):
                    if isinstance(item, Stats):  # the server's usage of the reply, counted to its user
                        used.prompt, used.cached, used.reply = item.prompt_tokens, item.cached_tokens, \
                            item.generated_tokens
                    yield item
            finally:
                self._active.pop(request_id, None)
                self._aborted.discard(request_id)

    async def _generate(self, turns, sampling: Sampling, prompt: Prompt, request_id: str, continue_reply: bool = False,
                        priority: int = 0):
        """One streamed chat completion, its server-sent events read as plain JSON (per token, a typed client's
        objects would cost more than the rest of the chat path: docs/scaling.md)."""
        body = {"model": self._model, "messages": turns, "max_tokens": prompt.max_tokens, "stream": True,
                **engine_values(sampling), "seed": sampling.seed,
                "ignore_eos": sampling.ignore_eos, "stream_options": {"include_usage": True},
                **(CONTINUE if continue_reply else {})}
        if priority and not self._priority_refused:
            body["priority"] = priority
        clock, reply = ReplyClock(), _Reply()
        try:
            async with self._http().stream("POST", f"{self._url}/chat/completions", json=body) as response:
                if response.status_code != 200:
                    detail = (await response.aread()).decode(errors="replace")[:300]
                    if not self._refuses_priority(body, response.status_code, detail):
                        raise RemoteEngineError(self._url, f"HTTP {response.status_code}: {detail}")
                else:
                    self._active[request_id] = response
                    async for line in response.aiter_lines():
                        text = reply.read(line, clock)
                        if text:
                            yield text
        except (httpx.HTTPError, httpx.StreamError, ValueError) as error:  # leaving `async with` closed the stream
            if request_id not in self._aborted:
                log.warning("a reply from the vLLM server at %s failed: %s", self._url, _describe(error))
                if isinstance(error, httpx.TransportError):
                    self._up = False
                raise RemoteEngineError(self._url, _describe(error)) from error
        if response.status_code != 200:  # refused for its priority alone: once more without
            async for item in self._generate(turns, sampling, prompt, request_id, continue_reply):
                yield item
            return
        usage = reply.usage or {}
        yield clock.stats(prompt, sampling.max_tokens, usage.get("completion_tokens", reply.pieces),
                          (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0,
                          "abort" if request_id in self._aborted else reply.finish, self._max_model_len or 0,
                          usage.get("prompt_tokens"))

    def _refuses_priority(self, body: dict, status: int, detail: str) -> bool:
        """Whether the server refused the request for its `priority` (a vLLM that refuses one without priority
        scheduling); from then on chats are sent without."""
        if status != 400 or "priority" not in body or "priority" not in detail.lower():
            return False
        self._priority_refused = True
        log.warning("the vLLM server at %s refuses priorities (%s): chats are sent without them; start it with "
                    "--scheduling-policy priority for chats to go first", self._url, detail)
        return True

    def _http(self) -> httpx.AsyncClient:
        """One connection pool for every reply (made in the event loop); no read timeout: a queued reply waits.
        An idle connection is dropped well before `vllm serve` drops it (5 s, uvicorn's keep-alive), so that no
        reply is sent on a connection the server is just closing (it would fail with a ReadError)."""
        if self._client is None:
            limits = httpx.Limits(max_connections=None, keepalive_expiry=KEEPALIVE_S)
            self._client = httpx.AsyncClient(headers=self._headers, limits=limits, transport=self._transport,
                                             timeout=httpx.Timeout(CONNECT_TIMEOUT_S, read=None))
        return self._client

    def _tokenizer(self, system: str, continue_reply: bool = False):
        """`render(turns) -> token ids` by the server's own chat template and tokenizer (its /tokenize)."""
        def render(turns: list[dict]) -> list[int]:
            body = {"model": self._model, "messages": _with_system(system, turns),
                    **(CONTINUE if continue_reply else {"add_generation_prompt": True})}
            try:
                with httpx.Client(headers=self._headers, timeout=CONNECT_TIMEOUT_S,
                                  transport=self._transport) as http:  # a mock transport serves both
                    response = http.post(f"{self._root}/tokenize", json=body)
                response.raise_for_status()
                return response.json()["tokens"]
            except (httpx.HTTPError, ValueError, KeyError) as error:
                raise RemoteEngineError(self._url, _describe(error)) from error
        return render

    def stopped_stats(self, request_id: str) -> Stats | None:
        return None  # the server tells a reply's usage at its end only

    async def abort(self, request_id: str) -> None:
        """Stop one request: its stream is closed, and the server aborts a request whose client went away."""
        response = self._active.get(request_id)
        if response is not None:
            self._aborted.add(request_id)
            await response.aclose()

    async def abort_all(self) -> None:
        for request_id in list(self._active):
            await self.abort(request_id)

    async def count_tokens(self, text: str) -> int | None:
        """By the server's /tokenize (its own tokenizer); None while it cannot be reached."""
        if not self.ready:
            return None
        try:
            response = await self._http().post(f"{self._root}/tokenize",
                                               json={"model": self._model, "prompt": text, "add_special_tokens": False})
            response.raise_for_status()
            return int(response.json()["count"])
        except (httpx.HTTPError, ValueError, KeyError, TypeError):
            return None

    def saturated(self, user: str | None = None) -> bool:  # the server's queue: its slots are not known here
        return self._gauges.get("vllm:num_requests_waiting", 0) > 0

    async def switch_preset(self, name: str, progress=None, before_stop=None) -> bool:
        raise ChatError(f"Cannot switch to the '{name}' preset.", self.presets_locked)

    # ---- status and lifecycle -----------------------------------------------------
    def status(self) -> Status:
        gauges = self._gauges if self.ready else {}
        return Status(
            state=self.state,
            preset="remote", purpose=f"the vLLM server at {self._url}", device=self._url,
            max_model_len=self._max_model_len, needs_gib=None, memory_used_gib=None,
            kv_cache_usage=gauges.get("vllm:kv_cache_usage_perc"),
            requests_running=int(gauges.get("vllm:num_requests_running", 0)),
            requests_waiting=int(gauges.get("vllm:num_requests_waiting", 0)),
            chat_requests=self.chat_requests, api_sequences=self.api_sequences,
            user_share=self._admission.share, waiting_for_share=sum(self._admission.waiting().values()),
        )

    async def openai_app(self):
        """None: the remote server serves its own API (`serves_api` is False)."""
        return None

    def expect_stop_on_signals(self) -> None:
        """Nothing to mark: the server's engine is not this process's to stop."""

    def shutdown(self) -> None:
        """Nothing runs here to stop; the background check ends at its next turn."""
        self._closed = True

    def preload(self) -> None:
        """Nothing to import ahead of time: no engine runs in this process."""


class _Reply:
    """What the server's events of one reply said so far: its usage, finish reason and pieces of text."""

    def __init__(self):
        self.usage: dict | None = None
        self.finish: str | None = None
        self.pieces = 0

    def read(self, line: str, clock: ReplyClock) -> str | None:
        """One line of the event stream; returns the text it adds, if any."""
        if not line.startswith("data: {"):
            return None
        chunk = json.loads(line[6:])
        self.usage = chunk.get("usage") or self.usage
        if not chunk.get("choices"):
            return None
        clock.arrived()
        choice = chunk["choices"][0]
        self.finish = choice.get("finish_reason") or self.finish
        text = (choice.get("delta") or {}).get("content")
        self.pieces += bool(text)
        return text


def read_gauges(text: str) -> dict[str, float]:
    """vLLM's gauges from Prometheus text, summed over their labels (engines, models)."""
    from prometheus_client.parser import text_string_to_metric_families

    gauges: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        if family.type == "gauge" and family.name.startswith("vllm:") and family.samples:
            values = [sample.value for sample in family.samples]
            # counts add up over a data-parallel server's engines; a fraction in use is their mean
            gauges[family.name] = sum(values) / (len(values) if family.name.endswith("_perc") else 1)
    return gauges


def surely_fits(turns: list[dict], max_tokens: int, max_model_len: int | None) -> bool:
    """True when the prompt cannot be longer than the context leaves for the reply: a token of text is at
    least one byte (byte-level and SentencePiece tokenizers alike), and the chat template adds a few per turn."""
    if max_model_len is None:
        return False
    bound = sum(len(t["content"].encode()) + 16 for t in turns) + 64
    return bound + max_tokens <= max_model_len


def _with_system(system: str, turns: list[dict]) -> list[dict]:
    head = [{"role": "system", "content": system}] if system.strip() else []
    return head + [{"role": t["role"], "content": t["content"]} for t in turns]


def _describe(error: Exception) -> str:
    if isinstance(error, httpx.HTTPStatusError):
        return f"HTTP {error.response.status_code} from {error.request.url}"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
