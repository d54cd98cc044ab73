"""Random weights made to look trained for the sampler: the final norm scaled, so that a top p keeps a few tokens.

Random weights give nearly flat logits: at top p 0.8 they keep tens of thousands of tokens, which no trained
model does, and a sampler's cost then measures that flatness. Every benchmark row that compares samplers or
engines runs on the same sharpened copy (`--sharpen N`; 6 gives a trained model's few likely tokens).
"""

import shutil
import tempfile
from pathlib import Path


def sharpened(model: Path, factor: float) -> Path:
    """A copy of `model` with its final norm `factor` times as large (written once, beside the system's temp)."""
    import torch
    from safetensors.torch import load_file, save_file

    copy = Path(tempfile.gettempdir()) / f"{model.name}-sharpened-{factor:g}"
    if not copy.is_dir():  # written beside it, then renamed: a copy cut short is never taken for one
        partial = copy.with_name(copy.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(model, partial)
        weights = load_file(model / "model.safetensors")
        weights["model.norm.weight"] = (weights["model.norm.weight"].float() * factor).to(torch.bfloat16)
        save_file(weights, partial / "model.safetensors", metadata={"format": "pt"})
        partial.rename(copy)
    return copy
