"""The one vLLM engine of the process as a state machine: start, switch preset, sleep, wake, stop.

Every chat and the API share one `ChatEngine`, the embedded backend of the contract (engine/backend.py). Its state
(`TRANSITIONS`: stopped, starting, ready, switching, falling asleep, asleep, waking, failed) changes only in the
steps below, each step through the table under one lock (`_step`); the long steps (start, switch, sleep, wake) run
one at a time under an asyncio lock, and a shutdown, from any thread, takes the state's lock alone. What runs in
each state is a `VllmHost` (engine/hosting.py: vLLM's engine, its processes and memory, its preparation ahead and
the stop signals); a reply runs on it by engine/requests.py. It starts lazily on the first request; callers
arriving meanwhile share that start (and its progress reports). After `CHAT_IDLE_MINUTES` with nothing running it
falls asleep (engine/idle.py), and the next request wakes it through the same start. The engine lives in a module
object that survives Chainlit's `-w` re-imports (`shared_engine()`), so a reload never builds a second engine on
the GPU.
"""

import asyncio
import atexit
import logging
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

from engine import build, download, hardware, hosting, leftovers, model_files, presets
from engine.admission import WARMUP, Admission
from engine.who import LOCAL
from engine.backend import Backend
from engine.errors import ChatError, EngineStartError, PresetSwitchError
from engine.hosting import VllmHost
from engine.idle import IdleTimer
from engine.progress import ProgressReports
from engine.reports import ProgressCallback, Stats, Status
from engine.requests import PROMPTS, ChatRequests
from engine.settings import Sampling, Settings, load_settings
from engine.single_flight import SingleFlight
from engine.startup import classify_start_error, plan_start
from engine.status import engine_status
from lifetime.runtime import RUNTIME

log = logging.getLogger("engine")
WARMUP_PROMPT = "Warm-up: say hello in one short sentence."
# The embedded engine's states (engine.backend.STATES) and the steps between them; any other step is a bug and
# raises. "ready" goes to "starting" when the engine died (a restart); "shutdown" goes to "stopped" from anywhere.
TRANSITIONS = {
    "stopped": {"starting", "switching"},
    "starting": {"ready", "failed", "stopped"},
    "ready": {"starting", "switching", "falling asleep", "stopped"},
    "failed": {"starting", "switching", "stopped"},
    "switching": {"ready", "asleep", "failed", "stopped"},
    "falling asleep": {"asleep", "stopped"},
    "asleep": {"waking", "switching", "stopped"},
    "waking": {"ready", "asleep", "stopped"},
}


class ChatEngine(Backend):
    def __init__(self, settings: Settings, engine_args: dict | None = None,
                 preset: presets.Preset | None = None):
        """`engine_args`: vLLM engine arguments over those the preset gives (a benchmark's, e.g. no prefix
        cache); `preset`: its values, where they are known before the start (a test of the shares that starts
        nothing); a start sets them anew."""
        self._preset_name = settings.preset
        self._preset = preset
        self._engine_args = dict(engine_args or {})
        self._device: hardware.Device | None = None
        self._dtype = "auto"
        self._state = "stopped"
        self._stepping = threading.Lock()  # the state's own lock: every step, a shutdown from any thread too
        self._host: VllmHost | None = None  # what runs: the engine built for the preset, awake or asleep
        self._closing = False  # the process is ending (Ctrl-C, SIGTERM): a dead engine is not restarted
        self._openai: tuple = (None, None)  # the engine client vLLM's OpenAI app was built over, and that app
        self._openai_building = asyncio.Lock()
        self._lock = asyncio.Lock()  # one start, switch or sleep at a time
        self._progress = ProgressReports()
        self._start = SingleFlight(self._progress)
        self._asleep_since: float | None = None  # when it fell asleep (wall clock), while nobody chats
        self._idle = IdleTimer(settings.idle_minutes, self._busy, self.fall_asleep)
        super().__init__(settings, Admission(  # the chats' and the API's sequences, by user
            on_change=self._idle.touch, prioritized=settings.fair_share,
            share=lambda: settings.share(self._preset.max_num_seqs if self._preset else None)))
        self._requests = ChatRequests(self._admission, self._restart_in_background)
        self._failure: ChatError | None = None  # why the last start failed, until a retry or a switch

    # ---- what it is now, read-only -------------------------------------------------
    @property
    def presets_locked(self) -> str | None:
        return None  # presets can be switched: the engine is ours to size

    @property
    def serves_api(self) -> bool:
        return True  # its `AsyncLLM` can back the OpenAI-compatible API on the chat server

    @property
    def preset_name(self) -> str:
        return self._preset_name

    @property
    def preset(self) -> presets.Preset | None:
        return self._preset

    @property
    def device(self) -> hardware.Device | None:
        """The device the preset runs on, once a start planned it."""
        return self._device

    @property
    def dtype(self) -> str:
        return self._dtype

    @property
    def failure(self) -> ChatError | None:
        """Why the last start failed, until a retry or a switch."""
        return self._failure

    @property
    def asleep_since(self) -> float | None:
        """When it fell asleep (wall clock), while nobody chats; else None."""
        return self._asleep_since

    @property
    def closing(self) -> bool:
        """Whether the process is ending (Ctrl-C, SIGTERM): a dead engine is not restarted."""
        return self._closing

    @property
    def streaming(self) -> int:
        """Chat replies whose requests are in the engine now."""
        return len(self._requests.active)

    # ---- the state machine -----------------------------------------------------
    @property
    def state(self) -> str:
        """One of TRANSITIONS; an engine that died while ready is "stopped" until its restart begins."""
        if self._state == "ready" and not self.ready:
            return "stopped"
        return self._state

    def _enter(self, state: str) -> None:
        with self._stepping:
            self._step(state)

    def _step(self, state: str) -> None:
        """One step of the table; the state's lock is held."""
        if state != self._state and state not in TRANSITIONS[self._state]:
            raise RuntimeError(f"the engine cannot go from {self._state} to {state}")
        self._state = state

    def _settled(self) -> str:
        """The state that what runs now stands for, once a step ends."""
        if self._host is not None and self._host.asleep or self._asleep_since is not None and self._host is None:
            return "asleep"
        if self._host is not None and self._host.running:
            return "ready"
        return "failed" if self._failure is not None else "stopped"

    @property
    def ready(self) -> bool:
        return self._state == "ready" and self._host is not None and self._host.running

    @property
    def host(self) -> VllmHost | None:
        """What runs now (awake or asleep), or None."""
        return self._host

    @property
    def client(self):
        """vLLM's `AsyncLLM` while the engine runs, else None: what the OpenAI-compatible API serves from."""
        return self._host.llm if self.ready else None

    @property
    def max_model_len(self) -> int | None:
        return self._preset.max_model_len if self._preset else None

    async def openai_app(self):
        """vLLM's OpenAI app over the running engine (started first): its replies end at the chat's stop tokens
        and sample top p as the chat's do (engine/openai_app.py). One per engine instance."""
        from engine.openai_app import build_openai_app

        await self.ensure_started()
        async with self._openai_building:
            llm = self.client
            if llm is None:  # it stopped again meanwhile (a switch): wait for the next one
                await self.ensure_started()
                llm = self.client
            if self._openai[0] is not llm:
                self._openai = (llm, await build_openai_app(llm, self.settings.model, self._host.stop_ids,
                                                                 self.settings.sampling()))
                log.info("OpenAI-compatible API ready at /v1 for %s", self.settings.model)
            return self._openai[1]

    # ---- start -----------------------------------------------------------------
    async def ensure_started(self, progress: ProgressCallback | None = None, retry: bool = False) -> None:
        """Start (or wake) the engine unless it runs; concurrent callers share one start.

        A failed start is remembered: later calls raise its error at once, until `retry` (or a preset switch).
        """
        if self.ready:
            return
        if self._failure is not None and not retry and not self._start.running:
            raise self._failure
        await self._start.join(self._start_locked, progress)

    async def _start_locked(self) -> None:
        async with self._lock:
            if self.ready:
                return
            if self._state == "asleep":
                await self._wake()
                return
            self._enter("starting")
            try:
                await self._launch(self._preset_name)
            except Exception as error:
                log.error("the engine did not start: %s", error)
                self._failure = error if isinstance(error, ChatError) else None
                self._enter(self._settled())
                raise
            self._enter("ready")

    async def _launch(self, name: str, waking: bool = False) -> None:
        """Build the engine for preset `name` and warm it up. The lock is held; the caller sets the state."""
        if self._host is not None:  # a dead (or sleeping) engine: release its processes and memory first
            await self._stop_host()
        began = time.monotonic()
        await self._progress.emit("Waking the engine" if waking else "Checking the device and the model", began)
        plan = await asyncio.to_thread(plan_start, name, self.settings)
        self._device, self._preset, self._dtype = plan.device, plan.preset, plan.dtype
        build.use_environment(self._device.kind)
        if plan.download:
            folder = await download.fetch(self.settings, lambda text: self._progress.emit(text, began))
        else:
            folder = await asyncio.to_thread(download.local_folder, self.settings)
        stage = f"Loading {self.settings.model} ({self._preset.name} preset)"
        self._host = VllmHost(self._device)
        try:
            await self._host.build(
                self._engine_kwargs(plan, folder), lambda: self._progress.emit(stage, began),
                lambda error, output: classify_start_error(error, self.settings.model, self._preset, output))
            if self.settings.warmup:
                await self._progress.emit("Warming up", began)
                await self._warm_up()
        except BaseException:  # a start that failed (or was cancelled) leaves nothing running
            await asyncio.shield(self._stop_host())
            raise
        self._preset_name, self._failure, self._asleep_since = name, None, None
        self._idle.start()
        await self._progress.emit("Ready", began, done=True, notice="" if waking else plan.notice)
        log.info("engine ready: %s preset on %s in %.1f s", self._preset.name, self._device.name,
                 time.monotonic() - began)

    def _engine_kwargs(self, plan, folder) -> dict:
        kwargs = presets.engine_kwargs(
            self._preset, str(folder), self._device.total_bytes if self._device.kind == "cuda" else None,
            plan.dtype, self.settings.gpus, self.settings.parallel,
        )
        kwargs["served_model_name"] = self.settings.model  # what users and API clients call it, not the folder
        if self.settings.fair_share:  # a chat goes ahead of a batch (engine/admission.py)
            kwargs["scheduling_policy"] = "priority"
        kwargs.update(model_files.engine_overrides(folder))  # the repo's first layout (engine/model_files.py)
        if self._device.kind == "cuda" and self.settings.idle_minutes > 0:
            kwargs["enable_sleep_mode"] = True  # the idle engine gives the card back (engine/idle.py)
        kwargs.update(self._engine_args)  # the caller's own, last (engine_args)
        return kwargs

    async def _warm_up(self) -> None:
        """Run the first requests now: the first round at a batch size compiles kernels, and so does each
        sampler path the first time it runs. The chat's sampling (top p) goes to FlashInfer on a GPU whose
        kernels are built (vLLM's sort elsewhere); a seeded batch of 8 or more to vLLM's Triton top-p kernel."""
        sampling = Sampling(temperature=0.8, max_tokens=8, ignore_eos=True)
        messages = [{"role": "user", "content": WARMUP_PROMPT}]

        async def one(params: Sampling) -> None:
            async for _ in self._requests.generate(self._host, self._preset.max_model_len, messages, params, "",
                                                   uuid.uuid4().hex, who=WARMUP):
                pass

        await one(sampling)
        if self._device.kind == "cuda":  # on the CPU the first request sets up its kernels for every batch
            await asyncio.gather(*(one(sampling.model_copy(update={"seed": n}))
                                   for n in range(min(8, self._preset.max_num_seqs))))

    async def _stop_host(self) -> None:
        host, self._host = self._host, None
        if host is not None:
            await host.stop()

    # ---- sleep -----------------------------------------------------------------
    def _busy(self) -> bool:
        return self._admission.held() > 0 or not self.ready

    async def fall_asleep(self) -> bool:
        """Give the device back while nobody chats (the idle timer asks); False when a request or a start came
        meanwhile. A GPU engine sleeps in vLLM's sleep mode; a CPU engine, which has none, stops."""
        async with self._lock:
            if self._busy() or self._closing:
                return False
            self._asleep_since = time.time()  # from here on a request waits for the wake (`ready` is False)
            self._enter("falling asleep")
            try:
                if self._host.sleeps_on_device:
                    await self._host.sleep()
                else:
                    await self._stop_host()
            finally:
                self._enter("asleep")
            log.info("the engine sleeps after %.1f idle minutes (%s)", self.settings.idle_minutes,
                     "its memory given back" if self._host is not None else "stopped: it starts with the next message")
            return True

    async def _wake(self) -> None:
        """Bring a sleeping engine back; the lock is held. A GPU engine whose memory another program took meanwhile
        is stopped and started anew, so the start says in plain words what it needs and what is free. A wake that
        fails leaves the engine asleep, and the next request tries again (it is not remembered as a failure)."""
        began = time.monotonic()
        self._enter("waking")
        try:
            if self._host is not None and self._host.asleep:
                await self._progress.emit("Waking the engine", began)
                try:
                    await self._host.wake_up()
                except Exception as error:
                    log.warning("waking the engine failed (%s: %s); starting it anew", type(error).__name__, error)
                    await self._launch(self._preset_name, waking=True)
                else:
                    self._asleep_since = None
                    self._idle.start()
                    await self._progress.emit("Ready", began, done=True)
                    log.info("engine awake in %.2f s", time.monotonic() - began)
            else:  # stopped on the CPU: a start with the same preset
                await self._launch(self._preset_name, waking=True)
        except Exception as error:
            log.error("the engine did not wake: %s", error)
            self._enter("asleep")
            raise
        self._enter("ready")

    # ---- switch ----------------------------------------------------------------
    async def switch_preset(self, name: str, progress: ProgressCallback | None = None,
                            before_stop: Callable[[], Awaitable[None]] | None = None) -> bool:
        """Replace the engine with one for preset `name`; False when that preset already runs.

        Everything that can be checked is checked before the running engine stops (a failure then
        leaves it running); `before_stop` is awaited just before it stops. When the new engine fails
        to start, the previous preset is started again.
        """
        presets.lookup(name, self.settings.custom_preset)  # an unknown name fails before anything stops
        self._progress.add(progress)
        try:
            async with self._lock:
                self._failure = None  # a switch is a new attempt
                self._enter("switching")
                try:
                    return await self._switch_locked(name, before_stop)
                finally:
                    self._enter(self._settled())
        finally:
            self._progress.remove(progress)

    async def _switch_locked(self, name: str, before_stop) -> bool:
        began = time.monotonic()
        await self._progress.emit("Checking the preset", began)
        previous = self._preset_name
        try:
            plan = await asyncio.to_thread(plan_start, name, self.settings, self._held_gpu_bytes())
        except ChatError as error:
            raise PresetSwitchError(name, previous, error) from error
        runs = self._host is not None and self._host.running or self._asleep_since is not None
        if runs and (plan.preset, plan.dtype) == (self._preset, self._dtype):
            self._preset_name = name
            await self._progress.emit(f"'{plan.preset.name}' already runs", began, done=True)
            return False
        if before_stop is not None:
            await before_stop()
        await self._progress.emit("Stopping the running engine", began)
        await self.abort_all()
        await self._stop_host()
        await self._launch_or_restore(name, previous)
        return True

    async def _launch_or_restore(self, name: str, previous: str) -> None:
        """Start preset `name`; when it fails, start `previous` again and say why the switch failed."""
        try:
            await self._launch(name)
        except Exception as error:
            log.warning("preset %s failed to start (%s); restoring %s", name, error, previous)
            try:
                await self._launch(previous)
            except Exception as again:
                raise EngineStartError(
                    f"Switching to '{name}' failed ({error}) and '{previous}' did not come back ({again}).",
                    "Restart the app.",
                ) from again
            raise PresetSwitchError(name, previous, error) from error

    def _held_gpu_bytes(self) -> int:
        """GPU memory the running engine holds (what a switch gets back before the new one starts)."""
        if self._host is None or self._device is None or self._device.kind != "cuda":
            return 0
        return self._host.held_bytes() or 0

    # ---- stop ------------------------------------------------------------------
    def shutdown(self) -> None:
        """Stop the engine and its processes; safe to call any number of times, from any thread (during vLLM's
        build too: engine/hosting.py). A step of the table like any other, under the state's lock (every state
        has it: the process ends, or a test is done with the engine); what ran is taken in the same step and
        stopped after it, so that no other step waits on its processes."""
        with self._stepping:
            host, self._host = self._host, None
            self._step("stopped")
        if host is not None:
            host.shutdown()

    def expect_stop_on_signals(self) -> None:
        """From Ctrl-C or SIGTERM on, the engine's end is the stop the user asked for, not a crash.

        The engine's processes run apart from the terminal (vllm_patches.engine_processes_apart), but a service
        manager's SIGTERM to the whole service can still reach them before the app's own shutdown begins;
        and a reply that fails meanwhile must not start a new engine. Call from the main thread once the web
        server has installed its handlers; they still run after this one (engine/hosting.py).
        """
        hosting.on_stop_signals(self._closing_now)

    def _closing_now(self) -> None:
        self._closing = True
        if self._host is not None:
            self._host.stopped.set()

    def preload(self) -> None:
        """Prepare vLLM ahead of the first start (engine/hosting.py); safe to call from a thread."""
        hosting.preload(self.settings)

    # ---- requests (engine/requests.py) --------------------------------------------
    async def stream(self, messages: list[dict], sampling: Sampling | None = None,
                     system_prompt: str | None = None, request_id: str | None = None,
                     continue_reply: bool = False, user: str | None = None) -> AsyncIterator[str | Stats]:
        """Yield the reply's text deltas, then one `Stats`. Closing the stream aborts the request.
        `continue_reply`: the messages end with a partial reply, which the model goes on writing. `user`: whose
        chat it is (its share of the engine); None is the local user."""
        await self.ensure_started()
        system = self.settings.system_prompt if system_prompt is None else system_prompt
        async for item in self._requests.generate(
                self._host, self._preset.max_model_len, messages, sampling or self.settings.sampling(), system,
                request_id or uuid.uuid4().hex, continue_reply, user or LOCAL):
            yield item

    def stopped_stats(self, request_id: str) -> Stats | None:
        """What the reply of `request_id` cost up to its Stop (once; None when it was not stopped here)."""
        return self._requests.stopped_stats(request_id)

    def _restart_in_background(self) -> None:
        """After the engine died, start a new one now; the next message joins that start."""
        async def restart() -> None:
            try:
                await self.ensure_started()
            except Exception:
                log.exception("restarting the engine failed; the next message will try again")

        if not self._start.running and not self._closing:
            asyncio.get_running_loop().create_task(restart())

    async def count_tokens(self, text: str) -> int | None:
        host = self._host
        if host is None or host.tokenizer is None:
            return None
        return await asyncio.get_running_loop().run_in_executor(  # the prompts' one tokenizer thread
            PROMPTS, lambda: len(host.tokenizer.encode(text, add_special_tokens=False)))

    def saturated(self, user: str | None = None) -> bool:
        """True when a new request of `user` (None: the local user) would wait: every sequence slot is taken (by
        chats or the API), or that user's share is."""
        if self._preset is None:
            return False
        share = self._admission.share
        return self._admission.held() >= self._preset.max_num_seqs or (
            share is not None and self._admission.held_by(user or LOCAL) >= share)

    async def abort(self, request_id: str) -> None:
        """Stop one request in the engine; its stream ends with finish reason 'abort'."""
        await self._requests.abort(self._host, request_id)

    async def abort_all(self) -> None:
        """Stop every request in the engine, the chats' and the API's (before the engine stops)."""
        if self._host is None or await self._host.abort_every_request():
            return
        for request_id in self._requests.active:  # vLLM could not (said in the log): the chats' one by one
            await self.abort(request_id)

    # ---- status ----------------------------------------------------------------
    def status(self) -> Status:
        return engine_status(self)

    @property
    def held_memory_gib(self) -> float | None:
        """What the engine holds now: on a GPU the whole device's use above the baseline, also while asleep; on
        the CPU its processes' memory (none while asleep: it stopped)."""
        held = self._host.held_bytes() if self._host is not None else None
        return None if held is None else held / presets.GIB


def shared_engine():
    """The process's engine, created on first call and kept across `-w` re-imports: the embedded one, or
    a client of the vLLM server at CHAT_ENGINE_URL (engine/remote.py), behind the same contract
    (engine/backend.py). Before the embedded one exists, engine processes that an earlier run of this app left
    behind in its data folder are ended (engine/leftovers.py): call this before the port is checked."""
    engine = getattr(RUNTIME, "engine", None)
    if engine is None:
        settings = load_settings()
        if settings.engine_url:
            from engine.remote import RemoteEngine

            engine = RUNTIME.engine = RemoteEngine(settings)
        else:
            leftovers.end_leftovers(settings.data_folder)
            leftovers.mark_engines_of_this_app(settings.data_folder)
            engine = RUNTIME.engine = ChatEngine(settings)
        atexit.register(engine.shutdown)
    return engine

