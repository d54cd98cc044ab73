"""Settings and presets: bad values fail with the variable, the rule, the value and the fix."""

import json

import pytest

from engine import presets, sizing
from engine.errors import SettingsError, UnknownPresetError
from engine.settings import Sampling, load_settings


def test_defaults_serve_ernie_on_the_automatic_preset(monkeypatch):
    for name in ("CHAT_MODEL", "CHAT_PRESET", "CHAT_CUSTOM_PRESET"):
        monkeypatch.delenv(name, raising=False)
    settings = load_settings()
    assert settings.model == "baidu/ERNIE-4.5-0.3B-PT" and settings.preset == "auto"


@pytest.mark.parametrize("variable,value,words", [
    ("CHAT_TEMPERATURE", "5", ["CHAT_TEMPERATURE", "less than or equal to 2", "'5'"]),
    ("CHAT_TOP_P", "0", ["CHAT_TOP_P", "greater than 0"]),
    ("CHAT_MAX_TOKENS", "0", ["CHAT_MAX_TOKENS", "greater than or equal to 1"]),
    ("CHAT_DEVICE", "tpu", ["CHAT_DEVICE", "'auto', 'cuda' or 'cpu'", "'tpu'"]),
    ("CHAT_CUSTOM_PRESET", '{"max_model_len": 4096}', ["CHAT_CUSTOM_PRESET_KV_CACHE_GIB", "required"]),
    ("CHAT_DTYPE", "fp8", ["CHAT_DTYPE", "'float16'", "'fp8'"]),
])
def test_a_bad_environment_value_names_variable_rule_value_and_fix(monkeypatch, variable, value, words):
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError) as info:
        load_settings()
    for word in words:
        assert word in str(info.value)
    assert ".env" in str(info.value)


def test_a_custom_preset_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("CHAT_CUSTOM_PRESET", json.dumps(
        {"kv_cache_gib": 0.5, "max_model_len": 2048, "max_num_seqs": 4,
         "max_num_batched_tokens": 2048, "swap_gib": 2}))
    settings = load_settings()
    preset = presets.lookup("custom", settings.custom_preset)
    kwargs = presets.engine_kwargs(preset, "m", total_bytes=8 << 30)
    assert kwargs["max_model_len"] == 2048 and kwargs["kv_offloading_size"] == 2
    assert kwargs["kv_cache_memory_bytes"] == 512 << 20


def test_gpu_presets_hand_on_text_every_8_tokens_and_the_cpu_preset_every_token():
    for name in ("2gb", "4gb", "6gb", "8gb"):
        assert presets.engine_kwargs(presets.BUILT_IN[name], "m", 8 << 30)["stream_interval"] == 8
    assert "stream_interval" not in presets.engine_kwargs(presets.BUILT_IN["cpu"], "m")
    with pytest.raises(ValueError, match="stream_interval"):
        presets.Preset(kv_cache_gib=1, max_model_len=2048, max_num_seqs=4, max_num_batched_tokens=2048,
                       stream_interval=0)


def test_unknown_preset_lists_the_valid_names():
    with pytest.raises(UnknownPresetError) as info:
        presets.lookup("16gb")
    assert "'16gb'" in str(info.value) and "auto, 2gb, 4gb, 6gb, 8gb, cpu" in str(info.value)


def test_sampling_refuses_unknown_keys_so_clients_cannot_set_engine_options():
    with pytest.raises(ValueError, match="extra"):
        Sampling(temperature=0.5, gpu_memory_utilization=0.99)


def test_every_gpu_preset_leaves_a_desktops_share_of_its_card_free():
    # A card of N GB shows about N GiB in NVML; a desktop and a browser take up to 1 GiB of it.
    for name in ("4gb", "6gb", "8gb"):
        need = sizing.footprint(presets.BUILT_IN[name])
        assert need.needs_free <= (int(name.removesuffix("gb")) - 1.0) * sizing.GIB
        assert need.kv_cache < need.total


def test_several_gpus_run_as_data_parallel_copies_or_one_tensor_parallel_model(monkeypatch):
    monkeypatch.setenv("CHAT_GPUS", "2")
    settings = load_settings()
    four = presets.BUILT_IN["4gb"]
    data = presets.engine_kwargs(four, "m", 8 << 30, gpus=settings.gpus, parallel=settings.parallel)
    tensor = presets.engine_kwargs(four, "m", 8 << 30, gpus=2, parallel="tensor")
    assert data["data_parallel_size"] == 2 and "tensor_parallel_size" not in data
    assert tensor["tensor_parallel_size"] == 2 and "data_parallel_size" not in tensor
    assert data["kv_cache_memory_bytes"] == tensor["kv_cache_memory_bytes"], "a preset's sizes are per GPU"
    assert "data_parallel_size" not in presets.engine_kwargs(presets.BUILT_IN["cpu"], "m", gpus=2)
    monkeypatch.setenv("CHAT_GPUS", "0")
    with pytest.raises(SettingsError, match="CHAT_GPUS"):
        load_settings()


def test_an_engine_url_must_be_an_http_url(monkeypatch):
    monkeypatch.setenv("CHAT_ENGINE_URL", "gpu-host:8000")
    with pytest.raises(SettingsError, match="CHAT_ENGINE_URL"):
        load_settings()
    monkeypatch.setenv("CHAT_ENGINE_URL", "http://gpu-host:8000/v1")
    assert load_settings().engine_url == "http://gpu-host:8000/v1"


def test_a_bad_setting_stops_the_server_with_its_sentence_not_a_traceback(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-m", "chainlit", "run", "app.py", "-h", "--port", "7993"],
                          cwd=root, env={**os.environ, "CHAT_USER_SHARE": "abc", "CHAT_HISTORY_DB":
                                         str(tmp_path / "chats.db")}, capture_output=True, text=True, timeout=300)
    said = done.stdout + done.stderr
    assert done.returncode == 1 and "Traceback" not in said, said[-3000:]
    assert "ERNIE Chat cannot start: CHAT_USER_SHARE: Input should be a valid integer" in said
