"""The memory presets, as data, and the one place that turns a preset into vLLM arguments.

A preset is sized for a card with a desktop on it: what it really takes on the
GPU (weights, the engine's CUDA context, activations and graphs, KV cache) is
computed by `engine.sizing.footprint()`, and `auto` picks the largest preset
whose footprint, plus headroom, fits the memory that is free right now. For
ERNIE-4.5-0.3B the KV cache is cheap (18 KiB per token: 1 GiB holds ~58k
tokens), so the fixed costs decide the fit.

"Swap space" is `swap_gib`: vLLM V1 replaced `swap_space` with CPU KV offload
(`kv_offloading_size`). It is off in the built-in presets: the GPU KV cache
already holds more tokens than the presets' sequences can use, and measured
offload made prefix hits slower (see docs/benchmarks.md). A custom preset can turn it on.

8 bits: `weights_8bit` keeps the linear layers' weights in 8 bits (fp8 on a GPU, quantized by vLLM as it
loads them; int8 on the processor, from a copy that engine/int8_weights.py writes once), `kv_8bit` keeps the
KV cache in fp8 (twice the tokens in the same memory). Each generated token reads every weight once, so
fewer bytes decode faster where memory bandwidth is the limit (small cards, processors). Quality on real
weights is not measured here: bf16 presets stay the default wherever they fit.
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from engine import int8_weights, sizing, top_p
from engine.errors import UnknownPresetError

GIB = sizing.GIB


class Preset(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field("custom", min_length=1, max_length=32, description="Name shown in the sidebar.")
    purpose: str = Field("Custom preset", max_length=120, description="What the preset is for, shown to the user.")
    device: Literal["cuda", "cpu"] = Field("cuda", description="Where it runs.")
    kv_cache_gib: float = Field(gt=0, le=1024, description="Memory for the KV cache (RAM on cpu).")
    max_model_len: int = Field(ge=256, le=131072, description="Longest prompt plus reply, in tokens.")
    max_num_seqs: int = Field(ge=1, le=1024, description="Most requests decoded together; more wait in a queue.")
    max_num_batched_tokens: int = Field(ge=256, le=65536, description="Most tokens in one engine step (prefill chunk).")
    cuda_graphs: bool = Field(True, description="Capture CUDA graphs for decode (much faster, costs a little memory "
                                                "and start time).")
    torch_compile: bool = Field(False, description="Compile the model with torch.compile (slower start).")
    prefix_caching: bool = Field(True, description="Reuse the KV cache of a shared prompt prefix.")
    swap_gib: float = Field(0.0, ge=0, le=1024, description="CPU RAM for offloaded KV cache (vLLM's "
                                                            "kv_offloading_size); 0 is off.")
    stream_interval: int = Field(1, ge=1, le=64, description="Tokens the engine gathers before handing a reply on "
                                 "(vLLM's stream_interval; the first token always goes at once). Fewer hand-overs "
                                 "leave the server more time when many chats stream.")
    weights_8bit: bool = Field(False, description="Linear layers' weights in 8 bits: fp8 on a GPU, int8 on a "
                               "processor (AVX2 and up; faster with AVX-512 VNNI or AMX); the embeddings stay bf16.")
    kv_8bit: bool = Field(False, description="KV cache in fp8: twice the tokens in the same memory.")

    @model_validator(mode="after")
    def _purpose_says_8_bit(self):
        """Whatever shows the purpose (the sidebar, /status) says when the preset runs in 8 bits."""
        note = precision(self)
        if note and note not in self.purpose:
            object.__setattr__(self, "purpose", f"{self.purpose} ({note})")
        return self


def precision(preset: Preset) -> str:
    """"8-bit weights, 8-bit KV" and the like; "" for bf16 throughout."""
    parts = [name for name, on in (("8-bit weights", preset.weights_8bit), ("8-bit KV", preset.kv_8bit)) if on]
    return ", ".join(parts)


# On the H200 one chat of the 4gb preset decodes 350-550 tokens a second, so 8 tokens come every 15-23 ms: within
# the 40 ms the chat gathers text before sending it anyway, so a reader sees the same stream. On a processor a chat
# decodes far fewer tokens a second and 8 would show as jumps: 1 there (and in custom presets unless set).
GPU_STREAM_INTERVAL = 8

BUILT_IN: dict[str, Preset] = {
    p.name: p
    for p in [
        Preset(name="2gb", purpose="The tightest cards (2.2 GiB free): 2k context, 16 chats at once",
               kv_cache_gib=0.35, max_model_len=2048, max_num_seqs=16, max_num_batched_tokens=1024,
               stream_interval=GPU_STREAM_INTERVAL),
        Preset(name="4gb", purpose="4 GB cards (3 GiB free): 4k context, 32 chats at once",
               kv_cache_gib=0.75, max_model_len=4096, max_num_seqs=32, max_num_batched_tokens=2048,
               stream_interval=GPU_STREAM_INTERVAL),
        Preset(name="6gb", purpose="6 GB cards (5 GiB free): 8k context, 32 chats at once",
               kv_cache_gib=2.5, max_model_len=8192, max_num_seqs=32, max_num_batched_tokens=4096,
               stream_interval=GPU_STREAM_INTERVAL),
        Preset(name="8gb", purpose="8 GB cards (7 GiB free): 16k context, 64 chats at once",
               kv_cache_gib=4.0, max_model_len=16384, max_num_seqs=64, max_num_batched_tokens=8192,
               stream_interval=GPU_STREAM_INTERVAL),
        Preset(name="cpu", purpose="No GPU: runs on the processor, 4k context",
               device="cpu", kv_cache_gib=1.0, max_model_len=4096, max_num_seqs=16,
               max_num_batched_tokens=2048, cuda_graphs=False),
        # 8 bits after bf16: the sidebar lists the default kind first
        Preset(name="2gb-8bit",
               purpose="2 GB cards (1.8 GiB free): 2k context, 16 chats at once, 8-bit weights, 8-bit KV",
               kv_cache_gib=0.09, max_model_len=2048, max_num_seqs=16, max_num_batched_tokens=512,
               stream_interval=GPU_STREAM_INTERVAL, weights_8bit=True, kv_8bit=True),
        Preset(name="cpu-8bit",
               purpose="No GPU, faster: the processor with 8-bit weights (int8), 4k context",
               device="cpu", kv_cache_gib=1.0, max_model_len=4096, max_num_seqs=16,
               max_num_batched_tokens=2048, cuda_graphs=False, weights_8bit=True),
    ]
}
GPU_BY_SIZE = ["8gb", "6gb", "4gb", "2gb"]  # largest first: what `auto` tries
GPU_8BIT_BY_SIZE = ["2gb-8bit"]  # what `auto` tries when no bf16 preset fits


def names(custom: Preset | None = None) -> list[str]:
    return ["auto", *BUILT_IN, *(["custom"] if custom else [])]


def lookup(name: str, custom: Preset | None = None) -> Preset | None:
    """The preset called `name`; None for `auto`, which depends on the device."""
    if name == "auto":
        return None
    if name == "custom" and custom is not None:
        return custom.model_copy(update={"name": "custom"})
    if name in BUILT_IN:
        return BUILT_IN[name]
    raise UnknownPresetError(name, names(custom))


def pick_auto(free_bytes: int, weights: int) -> Preset | None:
    """The largest bf16 GPU preset whose footprint fits the free memory with headroom, else the largest 8-bit
    one (every card vLLM's CUDA build runs on runs 8 bits); None if none does."""
    for name in GPU_BY_SIZE + GPU_8BIT_BY_SIZE:
        if sizing.fits(sizing.footprint(BUILT_IN[name], weights), free_bytes):
            return BUILT_IN[name]
    return None


def runnable(gpu_free_bytes: int | None, weights: int = sizing.ERNIE_WEIGHTS_BYTES,
             custom: Preset | None = None) -> tuple[list[str], list[str]]:
    """The presets this device can run, by name (`auto` first), and those among them too big for the GPU's free
    memory. `gpu_free_bytes` is None without a usable GPU: only the processor's presets run then (a GPU preset
    needs an NVIDIA GPU); on a GPU every preset runs where it fits (the processor's too)."""
    offered, too_big = [], []
    for name in names(custom):
        preset = lookup(name, custom)
        if preset is None or preset.device == "cpu":
            offered.append(name)
        elif gpu_free_bytes is not None:
            offered.append(name)
            if not sizing.fits(sizing.footprint(preset, weights), gpu_free_bytes):
                too_big.append(name)
    return offered, too_big


def smaller_than(preset: Preset) -> str | None:
    """The next smaller GPU preset, offered when this one runs out of memory."""
    size = sizing.footprint(preset).total
    smaller = [n for n in GPU_BY_SIZE + GPU_8BIT_BY_SIZE if sizing.footprint(BUILT_IN[n]).total < size]
    return smaller[0] if smaller else None


def engine_kwargs(preset: Preset, model: str, total_bytes: int | None = None, dtype: str = "auto", gpus: int = 1,
                  parallel: str = "data") -> dict:
    """vLLM engine arguments for this preset (on GPUs with `total_bytes` of memory each, `gpus` of them)."""
    kwargs = dict(
        model=model,  # a local folder: the weights were fetched before (engine/download.py)
        dtype=dtype,
        max_model_len=preset.max_model_len,
        max_num_seqs=preset.max_num_seqs,
        max_num_batched_tokens=preset.max_num_batched_tokens,
        kv_cache_memory_bytes=int(preset.kv_cache_gib * GIB),
        enable_prefix_caching=preset.prefix_caching,
        disable_log_stats=False,  # keeps the in-process metrics the status panel reads
        enforce_eager=not preset.cuda_graphs,
    )
    if preset.device == "cpu":  # top p without sorting the vocabulary (engine/top_p.py: a GPU sorts faster)
        kwargs["logits_processors"] = [top_p.PROCESSOR]
    if preset.weights_8bit and preset.device == "cuda":
        kwargs["quantization"] = "fp8"  # quantized as vLLM loads the bf16 weights; embeddings stay bf16
    elif preset.weights_8bit:
        kwargs["model"] = str(int8_weights.copy_folder(model))  # written at the build (int8_weights.ensure_copy)
    if preset.kv_8bit:
        kwargs["kv_cache_dtype"] = "fp8"
    if preset.swap_gib > 0:
        kwargs["kv_offloading_size"] = preset.swap_gib
    if preset.stream_interval > 1:
        kwargs["stream_interval"] = preset.stream_interval
    if preset.device == "cuda" and gpus > 1:
        kwargs["data_parallel_size" if parallel == "data" else "tensor_parallel_size"] = gpus
    if preset.device == "cuda" and total_bytes:
        need = sizing.footprint(preset, sizing.weights_bytes(model))
        kwargs["gpu_memory_utilization"] = sizing.gpu_memory_utilization(need, total_bytes)
        if preset.cuda_graphs:
            kwargs["compilation_config"] = {
                "mode": 3 if preset.torch_compile else 0,
                "cudagraph_mode": "FULL_AND_PIECEWISE" if preset.torch_compile else "FULL_DECODE_ONLY",
                "max_cudagraph_capture_size": preset.max_num_seqs,
            }
    return kwargs
