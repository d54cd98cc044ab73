"""The preset list as a user meets it: what `auto` runs, only the presets this device can run (the others left
out with a word why, or marked when they do not fit the free memory), and labels short enough for a phone."""

import pytest

from engine import hardware, presets
from engine.settings import load_settings
from harness.chat_client import ChatClient
from harness.presets import DEVICE
from ui import sidebar

PHONE_LABEL = 20  # characters that fit the select's width at 390 px without wrapping


def preset_widget(widgets: list) -> dict:
    return next(w if isinstance(w, dict) else w.to_dict() for w in widgets
                if (w["id"] if isinstance(w, dict) else w.id) == "preset")


@pytest.mark.skipif(DEVICE != "cpu" or hardware.gpu() is not None, reason="a machine without a GPU")
async def test_without_a_gpu_the_sidebar_offers_only_the_processors_presets_and_says_why(app_server):
    chat = await ChatClient(app_server.url).connect()
    try:
        select = preset_widget(chat.settings_widgets)
    finally:
        await chat.close()
    offered = {item["value"]: item["label"] for item in select["items"]}
    assert set(offered) == {"auto", "cpu", "cpu-8bit", "custom"}, offered
    assert offered["auto"] == "auto (now: cpu)", offered
    assert "GPU presets need an NVIDIA GPU" in select["description"], select["description"]
    assert all(len(label) <= PHONE_LABEL for label in offered.values()), offered
    assert "cpu-8bit: No GPU, faster" in select["description"], "what each preset is for went missing"


def test_on_a_small_gpu_auto_says_what_runs_and_presets_that_do_not_fit_are_marked(monkeypatch):
    card = hardware.Device("cuda", "RTX 3050", 4 << 30, int(1.2 * (1 << 30)), "580.65.06", (8, 6))
    monkeypatch.setattr(hardware, "cpu_build", lambda: False)
    monkeypatch.setattr(hardware, "gpu", lambda: card)
    settings = load_settings(preset="auto")
    running = presets.BUILT_IN["4gb"]
    select = preset_widget(sidebar.widgets(settings, sidebar.defaults(settings, "auto"), running))
    offered = {item["value"]: item["label"] for item in select["items"]}
    assert offered["auto"] == "auto (now: 4gb)" and offered["4gb"] == "4gb", offered
    assert offered["8gb"] == "8gb (too big)" and offered["6gb"] == "6gb (too big)", offered
    assert "cpu" in offered and "RTX 3050" in select["description"], select
    assert all(len(label) <= PHONE_LABEL for label in offered.values()), offered
    on_cpu = load_settings(preset="auto", device="cpu")  # the GPU is there, the server told to leave it
    forced = preset_widget(sidebar.widgets(on_cpu, sidebar.defaults(on_cpu, "auto")))
    assert {item["value"] for item in forced["items"]} == {"auto", "cpu", "cpu-8bit"}, forced
    assert "CHAT_DEVICE=cpu" in forced["description"], "a GPU machine told it has no GPU"
