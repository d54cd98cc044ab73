"""The systems under test, behind one small interface: run a prompt, get its timings.

`ours` goes through engine/ (the app's path minus the UI); `raw` and `default`
drive vLLM's AsyncLLM directly; `hf` is transformers `generate()`; `app` and `api`
are the real chat server, through its chats and through its OpenAI-compatible API.
The peers, what a user would run instead: `serve` is a plain `vllm serve` with the
articles' flags, `llama` llama.cpp's `llama-server` on a GGUF of the same weights;
both are read with the `openai` client, given the prompt's token ids.
All get the same text, put in the model's chat template.
"""

import asyncio
import json
import os
import random
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from engine import presets
from engine.chat import build_prompt


@dataclass(frozen=True)
class Result:
    ttft_s: float
    tokens: int
    total_s: float
    cached: int = 0
    ended: float = field(default_factory=time.monotonic)  # made when the request ends

    @property
    def began(self) -> float:
        return self.ended - self.total_s

    @property
    def decode_tok_s(self) -> float:
        return (self.tokens - 1) / max(self.total_s - self.ttft_s, 1e-9)


class Backend:
    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def prompt(self, size: int, seed: int) -> str:
        """About `size` tokens of words; different seeds share no prefix."""
        rng = random.Random(seed)
        return self.tokenizer.decode([rng.randrange(10, len(self.tokenizer)) for _ in range(size)])

    def token_ids(self, text: str) -> list[int]:
        return build_prompt(self.tokenizer, "", [{"role": "user", "content": text}], 131072, 1).token_ids

    async def run_many(self, prompts: list[str], max_tokens: int) -> list[Result]:
        return await asyncio.gather(*(self.run(p, max_tokens) for p in prompts))

    async def switch(self, name: str) -> None:
        raise NotImplementedError(f"{type(self).__name__} has no presets")


class Ours(Backend):
    def __init__(self, engine, temperature: float, top_p: float = 0.8):
        super().__init__(engine.host.tokenizer)
        self.engine, self.temperature, self.top_p = engine, temperature, top_p

    def raw(self) -> "RawVllm":
        """The same running engine, driven directly."""
        return RawVllm(self.engine.host.llm, self.tokenizer, self.temperature)

    async def run(self, text: str, max_tokens: int) -> Result:
        from engine.engine import Stats
        from engine.settings import Sampling

        sampling = Sampling(temperature=self.temperature, top_p=self.top_p, max_tokens=max_tokens, ignore_eos=True)
        async for item in self.engine.stream([{"role": "user", "content": text}], sampling, ""):
            if isinstance(item, Stats):
                return Result(item.ttft_s, item.generated_tokens, item.total_s, item.cached_tokens)

    async def switch(self, name: str) -> None:
        await self.engine.switch_preset(name)

    async def close(self) -> None:
        self.engine.shutdown()


class RawVllm(Backend):
    def __init__(self, llm, tokenizer, temperature: float):
        super().__init__(tokenizer)
        self.llm, self.temperature = llm, temperature

    async def run(self, text: str, max_tokens: int) -> Result:
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        params = SamplingParams(temperature=self.temperature, top_p=0.8, max_tokens=max_tokens, ignore_eos=True,
                                output_kind=RequestOutputKind.DELTA)
        began, first, tokens, cached = time.perf_counter(), None, 0, 0
        async for out in self.llm.generate({"prompt_token_ids": self.token_ids(text)}, params, uuid.uuid4().hex):
            tokens += len(out.outputs[0].token_ids)
            first = first or time.perf_counter()
            if out.finished:
                cached = out.num_cached_tokens or 0
        return Result(first - began, tokens, time.perf_counter() - began, cached)

    async def close(self) -> None:
        self.llm.shutdown()


class FirstTokenClock:
    """A transformers streamer that only notes when the first new token arrives."""

    def __init__(self):
        self.calls, self.first = 0, None

    def put(self, value) -> None:
        self.calls += 1
        if self.calls == 2:  # the first call carries the prompt
            self.first = time.perf_counter()

    def end(self) -> None:
        pass


class HfGenerate(Backend):
    """The articles' "traditional deployment": transformers generate(), greedy, on the same device."""

    def __init__(self, model, tokenizer, device: str):
        super().__init__(tokenizer)
        self.model, self.device = model, device

    async def run(self, text: str, max_tokens: int) -> Result:
        return (await self.run_many([text], max_tokens))[0]

    async def run_many(self, prompts: list[str], max_tokens: int) -> list[Result]:
        import torch

        rows = [self.token_ids(p) for p in prompts]
        width = max(map(len, rows))
        pad = self.tokenizer.pad_token_id
        ids = torch.tensor([[pad] * (width - len(r)) + r for r in rows], device=self.device)
        mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows], device=self.device)
        clock, began = FirstTokenClock(), time.perf_counter()
        with torch.inference_mode():
            out = self.model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_tokens,
                                      min_new_tokens=max_tokens, do_sample=False,
                                      streamer=clock if len(rows) == 1 else None, pad_token_id=pad)
        if self.device == "cuda":
            torch.cuda.synchronize()
        total = time.perf_counter() - began
        ttft = (clock.first - began) if clock.first else total
        return [Result(ttft, out.shape[1] - width, total) for _ in rows]

    async def close(self) -> None:
        import gc

        import torch

        del self.model
        gc.collect()
        if self.device == "cuda":
            torch.cuda.empty_cache()


class AppPath(Backend):
    """The whole app: a real `chainlit run app.py` server, one socket.io client per chat.

    Each request is a fresh chat, as in the other backends (no history). Opening the chats (connecting,
    sending the settings) happens before the requests start, as a user opens a chat before typing.
    """

    def __init__(self, servers, tokenizer, engine_server=None):
        """`servers`: the app processes (several share `engine_server`); chats are opened on each in turn."""
        super().__init__(tokenizer)
        self.servers, self.engine_server, self.opened = servers, engine_server, 0

    async def open_chat(self, max_tokens: int):
        from harness.chat_client import ChatClient

        server, self.opened = self.servers[self.opened % len(self.servers)], self.opened + 1
        client = await ChatClient(server.url).connect()
        await client.change_settings({"max_tokens": max_tokens, "show_stats": True})
        return client

    async def ask(self, client, text: str) -> Result:
        from harness.replies import stats_of

        began = time.monotonic()
        reply = await client.ask(text)
        ended = time.monotonic()
        stats = stats_of(reply.content)
        return Result(reply.first_at - began, stats["reply"], ended - began, stats["cached"], ended)

    async def run_many(self, prompts: list[str], max_tokens: int) -> list[Result]:
        clients = await asyncio.gather(*(self.open_chat(max_tokens) for _ in prompts))
        try:
            return await asyncio.gather(*(self.ask(c, p) for c, p in zip(clients, prompts)))
        finally:
            await asyncio.gather(*(c.close() for c in clients))

    async def run(self, text: str, max_tokens: int) -> Result:
        return (await self.run_many([text], max_tokens))[0]

    async def close(self) -> None:
        for server in self.servers:
            server.stop()
        if self.engine_server is not None:
            self.engine_server.stop()


async def read_stream(stream):
    """An `openai` stream read to its end: when its first token came, its usage, when it ended.

    vLLM and llama-server send the first chunk with the first token, even when its text is "".
    """
    first, usage = None, None
    async for chunk in stream:
        if first is None and chunk.choices:
            first = time.monotonic()
        usage = chunk.usage or usage
    return first, usage, time.monotonic()


class ApiPath(Backend):
    """The OpenAI-compatible API of a real `chainlit run app.py` server, with the `openai` client, streamed."""

    def __init__(self, server, tokenizer, model: str, temperature: float):
        import openai

        super().__init__(tokenizer)
        self.server, self.model, self.temperature = server, model, temperature
        self.client = openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key="unused-on-loopback")

    async def run(self, text: str, max_tokens: int) -> Result:
        began = time.monotonic()
        stream = await self.client.chat.completions.create(
            model=self.model, messages=[{"role": "user", "content": text}], max_tokens=max_tokens, stream=True,
            temperature=self.temperature, top_p=0.8, stream_options={"include_usage": True},
            extra_body={"ignore_eos": True})
        first, usage, ended = await read_stream(stream)
        details = usage.prompt_tokens_details
        return Result((first or ended) - began, usage.completion_tokens, ended - began,
                      (details.cached_tokens or 0) if details else 0, ended)

    async def close(self) -> None:
        await self.client.close()
        self.server.stop()


class OpenAICompletions(Backend):
    """A peer's OpenAI server, streamed with the `openai` client: our prompt's token ids, the app's sampling."""

    def __init__(self, server, tokenizer, model: str, temperature: float, chat: bool = False):
        """`chat`: send what the app sends its server (a chat completion of one user turn) instead of token ids."""
        import openai

        super().__init__(tokenizer)
        self.server, self.model, self.temperature, self.chat = server, model, temperature, chat
        # the client's own retries stay on: llama-server closes a kept-alive connection after 5 requests
        self.client = openai.AsyncOpenAI(base_url=server.url, api_key="unused", timeout=600)

    async def run(self, text: str, max_tokens: int) -> Result:
        began = time.monotonic()
        common = dict(model=self.model, max_tokens=max_tokens, stream=True, temperature=self.temperature, top_p=0.8,
                      stream_options={"include_usage": True}, extra_body={"ignore_eos": True})
        if self.chat:
            stream = await self.client.chat.completions.create(messages=[{"role": "user", "content": text}], **common)
        else:
            stream = await self.client.completions.create(prompt=self.token_ids(text), **common)
        first, usage, ended = await read_stream(stream)
        return Result((first or ended) - began, usage.completion_tokens, ended - began, 0, ended)

    async def close(self) -> None:
        await self.client.close()
        self.server.stop()


# The articles' `vllm serve`: memory by utilization, context and prefix caching set, the rest vLLM's defaults.
# On the CPU, vLLM's documented knob for the KV cache (`VLLM_CPU_KVCACHE_SPACE`, GiB) replaces the utilization,
# which there is a fraction of RAM and fails at 0.9 on a 24 GB machine.
SERVE_FLAGS = {"max_model_len": 4096, "enable_prefix_caching": True}
SERVE_GPU_FLAGS = {"gpu_memory_utilization": 0.9}
SERVE_CPU_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1"}


def prepare(config: dict) -> dict:
    """What a peer needs before it starts, kept out of its start-up time: its GGUF (converted once, as a
    user does), and the tokenizer that turns our prompts into the token ids it is sent."""
    if config["kind"] not in ("serve", "llama"):
        return {}
    from transformers import AutoTokenizer

    ready = {"tokenizer": AutoTokenizer.from_pretrained(config["model"])}
    if config["kind"] == "llama":
        from bench import gguf

        ready["gguf"] = gguf.convert(Path(config["model"]), config.get("outtype", "bf16"))
    return ready


async def create(config: dict, prepared: dict | None = None):
    kind, model = config["kind"], config["model"]
    if kind == "ours":
        from engine.engine import ChatEngine
        from engine.settings import load_settings

        custom = config.get("custom")
        settings = load_settings(model=model, preset=config["preset"], custom_preset=custom,
                                 gpus=config.get("gpus", 1), parallel=config.get("parallel", "data"))
        if config.get("vllm_top_p"):  # as before engine/top_p.py: vLLM sorts the vocabulary for a top p itself
            from engine import top_p

            top_p.serves = lambda llm: False
        engine = ChatEngine(settings)
        await engine.ensure_started()
        return Ours(engine, config.get("temperature", 0.8), config.get("top_p", 0.8))
    if kind in ("raw", "default"):
        return await asyncio.to_thread(_raw_vllm, config)
    if kind == "hf":
        return await asyncio.to_thread(_hf, model)
    if kind == "app":
        return await _app(config)
    if kind in ("serve", "llama"):
        return await asyncio.to_thread(_peer, config, prepared)
    if kind == "api":
        (server,), tokenizer, _ = await _server(config)
        api = ApiPath(server, tokenizer, model, config.get("temperature", 0.8))
        await api.run("Start the engine.", 1)  # the first request starts the engine
        return api
    raise ValueError(f"unknown kind {kind!r}")


def _raw_vllm(config: dict) -> RawVllm:
    from transformers import AutoTokenizer
    from vllm import AsyncEngineArgs
    from vllm.v1.engine.async_llm import AsyncLLM

    from engine import hardware

    model = config["model"]
    if config["kind"] == "default":  # the articles' configuration
        kwargs = dict(model=model, gpu_memory_utilization=0.9, max_num_seqs=16, disable_log_stats=False)
    else:
        preset = presets.lookup(config["preset"])
        device = hardware.gpu() if preset.device == "cuda" else None
        kwargs = presets.engine_kwargs(preset, model, device and device.total_bytes)
    return RawVllm(AsyncLLM.from_engine_args(AsyncEngineArgs(**kwargs)), AutoTokenizer.from_pretrained(model),
                   config.get("temperature", 0.8))


def _peer(config: dict, prepared: dict) -> OpenAICompletions:
    """A peer's server for `config`, started and answering: `vllm serve` or `llama-server`."""
    import tempfile

    from engine import hardware

    folder, model = Path(tempfile.mkdtemp()), config["model"]
    if config["kind"] == "llama":
        from bench.llama_server import LlamaServer

        preset = presets.lookup(config["preset"])  # as many slots, as long each, as the preset's engine has
        server = LlamaServer(prepared["gguf"], folder / "llama.log", preset.max_num_seqs, preset.max_model_len)
    else:
        from harness.vllm_server import VllmServer

        on_gpu = hardware.gpu() is not None
        if config.get("preset"):  # the engine a preset would give the app, as the remote path's server
            flags = _preset_args(config)
        else:  # the articles' flags
            if not on_gpu:
                os.environ.update(SERVE_CPU_ENV)
            flags = {**SERVE_FLAGS, **(SERVE_GPU_FLAGS if on_gpu else {}), "disable_log_stats": None}
        server = VllmServer(model, folder / "serve.log", engine_args=flags)
    return OpenAICompletions(server.start(), prepared["tokenizer"], model, config.get("temperature", 0.8),
                             chat=config.get("chat", False))


def _preset_args(config: dict) -> dict:
    """The engine arguments of `config`'s preset, for a `vllm serve` of them, with the row's `serve_flags`."""
    from engine import build, hardware

    build.use_environment("cuda")  # the vLLM environment of an embedded GPU engine (a CPU server keeps its own)

    custom = config.get("custom")
    preset = presets.lookup(config["preset"], custom and presets.Preset(**custom))
    device = hardware.gpu() if preset.device == "cuda" else None
    args = presets.engine_kwargs(preset, config["model"], device and device.total_bytes)
    # `vllm serve` keeps its stats on unless told otherwise; `serve_flags`: the row's own server flags
    return {**args, "disable_log_stats": None, **config.get("serve_flags", {})}


def _hf(model_path: str) -> HfGenerate:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.bfloat16).to(device).eval()
    return HfGenerate(model, AutoTokenizer.from_pretrained(model_path), device)


async def _app(config: dict) -> AppPath:
    app = AppPath(*await _server(config))
    await app.run("Start the engine.", 1)  # the first chat starts the engine
    return app


async def _server(config: dict):
    """A real chat server for `config`'s model and preset, started; the model's tokenizer; and, with
    `remote`, the `vllm serve` process the chat server uses as its engine."""
    import tempfile

    from transformers import AutoTokenizer

    from harness.server import ChainlitServer

    folder = Path(tempfile.mkdtemp())
    env, remote = {"CHAT_MODEL": config["model"], "CHAT_PRESET": config["preset"]}, None
    if config.get("custom"):
        env["CHAT_CUSTOM_PRESET"] = json.dumps(config["custom"])
    if config.get("remote"):  # the app as a client of a `vllm serve` process with the preset's arguments
        from harness.vllm_server import VllmServer

        engine_args = await asyncio.to_thread(_preset_args, config)
        remote = await asyncio.to_thread(VllmServer(config["model"], folder / "serve.log",
                                                    engine_args=engine_args).start)
        env = {"CHAT_ENGINE_URL": remote.url}
    if config.get("history") is False:  # the chat path without writing its turns to the database
        env["CHAT_HISTORY"] = "false"
    root = Path(config.get("tree") or Path(__file__).resolve().parent.parent)  # another checkout's app, if named
    servers = [await asyncio.to_thread(ChainlitServer(env, folder / f"chainlit-{index}.log", root=root).start)
               for index in range(config.get("app_processes", 1))]  # several: they share the remote server
    return servers, AutoTokenizer.from_pretrained(config["model"]), remote
