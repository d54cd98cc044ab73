"""What a preset really takes on a GPU, and the vLLM arguments that make vLLM agree.

One function, `footprint()`, says how much device memory the engine will hold
with a preset: the weights, the engine process's own CUDA context, the runtime
(activations of one engine step, the sampler's buffers, CUDA graphs, cuBLAS and
allocator workspace) and the KV cache. The start check, `auto`, the status panel,
bench/cards.py and the README's table all use it, so they agree.

The constants were measured with NVML on the whole device while serving
(ERNIE-4.5-0.3B shape, vLLM 0.26, H200; see docs/benchmarks.md):
the runtime grows with the tokens of one engine step (prefill activations) and
with the number of sequences (the sampler works on one 103k-entry row of logits
per sequence, and decode graphs are captured up to that batch).

In 8 bits (`weights_8bit`) vLLM quantizes the linear layers only: their weights take one byte each, plus
a scale; the embeddings, tied to the output layer, and the norms stay bf16. An 8-bit KV cache holds twice
the tokens in the memory the preset gives it.
"""

import math
from dataclasses import dataclass
from pathlib import Path

GIB = 1 << 30
MIB = 1 << 20
KIB = 1 << 10

ERNIE_WEIGHTS_BYTES = 360_748_032 * 2  # ERNIE-4.5-0.3B: its parameters (embeddings tied) in bf16
# ERNIE-4.5-0.3B's linear layers (18 x q, k, v, o, gate, up, down) hold 254,803,968 of its parameters; the rest
# is the 103,424 x 1,024 embedding and the norms. A model folder of another size is counted with the same share.
LINEAR_SHARE = 254_803_968 / 360_748_032
KV_BYTES_PER_TOKEN = 2 * 18 * 2 * 128 * 2  # K and V x 18 layers x 2 KV heads x head_dim 128 x bf16
ENGINE_CONTEXT_BYTES = 512 * MIB  # the CUDA context the engine process makes before it checks free memory
RUNTIME_BASE_BYTES = 380 * MIB  # workspace, graph pool, allocator slack: what every preset pays
RUNTIME_PER_BATCHED_TOKEN = 41 * KIB  # activations of one engine step, per token in it
RUNTIME_PER_SEQUENCE = int(2.5 * MIB)  # sampler buffers and decode graphs, per sequence
HEADROOM_BYTES = 256 * MIB  # left free on the card: allocator growth, other programs' small moves
# What fp8 weights held beyond their parts on the H200: 2gb-8bit (KV 0.15 GiB) peaked at 1.60 GiB where they
# add up to 1.51; 4gb with 8-bit weights and KV held none (2.22 measured, 2.21 counted): on the safe side.
EIGHT_BIT_RUNTIME_BYTES = 88 * MIB


@dataclass(frozen=True)
class Footprint:
    """Device memory the engine holds with one preset, by part, in bytes."""

    weights: int
    engine_context: int
    runtime: int
    kv_cache: int

    @property
    def total(self) -> int:
        return self.weights + self.engine_context + self.runtime + self.kv_cache

    @property
    def needs_free(self) -> int:
        """Free memory a start asks for: the footprint and the headroom left beside it."""
        return self.total + HEADROOM_BYTES

    def describe(self) -> str:
        parts = [("weights", self.weights), ("CUDA context", self.engine_context),
                 ("activations and graphs", self.runtime), ("KV cache", self.kv_cache)]
        inner = " + ".join(f"{name} {value / GIB:.2f}" for name, value in parts)
        return f"{self.total / GIB:.2f} GiB ({inner}) plus {HEADROOM_BYTES / GIB:.2f} GiB headroom"


def weights_bytes(model: str) -> int:
    """The size of the model's weights: its safetensors files when it is a local folder, else ERNIE-0.3B's."""
    folder = Path(model).expanduser()
    files = list(folder.glob("*.safetensors")) if folder.is_dir() else []
    return sum(f.stat().st_size for f in files) if files else ERNIE_WEIGHTS_BYTES


def footprint(preset, weights: int = ERNIE_WEIGHTS_BYTES) -> Footprint:
    """What the engine holds on the GPU with this preset (a `presets.Preset`), `weights` being the bf16 size."""
    runtime = (RUNTIME_BASE_BYTES + RUNTIME_PER_BATCHED_TOKEN * preset.max_num_batched_tokens
               + RUNTIME_PER_SEQUENCE * preset.max_num_seqs)
    held = weights
    if preset.weights_8bit:
        held, runtime = eight_bit_weights(weights), runtime + EIGHT_BIT_RUNTIME_BYTES
    return Footprint(held, ENGINE_CONTEXT_BYTES, runtime, int(preset.kv_cache_gib * GIB))


def eight_bit_weights(weights: int) -> int:
    """bf16 weights of `weights` bytes with the linear layers in one byte a parameter (scales are a few KiB)."""
    return weights - int(weights * LINEAR_SHARE) // 2


def kv_tokens(preset) -> int:
    """How many tokens the preset's KV cache holds (ERNIE-0.3B's shape)."""
    return int(preset.kv_cache_gib * GIB) // (KV_BYTES_PER_TOKEN // 2 if preset.kv_8bit else KV_BYTES_PER_TOKEN)


def fits(need: Footprint, free_bytes: int) -> bool:
    return need.needs_free <= free_bytes


def gpu_memory_utilization(need: Footprint, total_bytes: int) -> float:
    """The fraction vLLM checks at start (free after its CUDA context >= fraction x total).

    With `kv_cache_memory_bytes` set, vLLM uses the fraction for that check only. Asking
    for the footprint less the engine's context means: whenever `fits()` passed in this
    process, vLLM's own check passes inside the engine process too, with the headroom to spare.
    """
    wanted = need.total - need.engine_context
    return max(math.floor(wanted / total_bytes * 10_000) / 10_000, 0.0001)
