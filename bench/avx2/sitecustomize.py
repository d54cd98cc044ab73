"""Python on an AVX-512 machine made to run its math as on a processor with AVX2 only (most desktops).

For the benchmark's emulated AVX2 rows (`python -m bench.peers --isa avx2`), on this folder's PYTHONPATH: oneDNN
and ATen are limited by their own variables (`ONEDNN_MAX_CPU_ISA=AVX2`, `ATEN_CPU_CAPABILITY=avx2`, set by the
benchmark), but vLLM's CPU build chooses its kernels (`_C_AVX2` or the AVX-512 ones, its attention's ISA) by asking
torch what the processor has. Here torch answers as an AVX2 processor would: no AVX-512, no AMX. Nothing of the
app loads this outside the benchmark.
"""

import importlib.abc
import importlib.util
import sys

ABSENT = ("_is_avx512_supported", "_is_avx512_vnni_supported", "_is_avx512_bf16_supported",
          "_is_amx_tile_supported", "_is_amx_fp16_supported")


class _PatchTorchCpu(importlib.abc.MetaPathFinder):
    """Once `torch.cpu` is imported, its processor probes say no AVX-512 and no AMX."""

    def find_spec(self, fullname, path, target=None):
        if fullname != "torch.cpu":
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            for name in ABSENT:
                if hasattr(module, name):
                    setattr(module, name, lambda: False)

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _PatchTorchCpu())
