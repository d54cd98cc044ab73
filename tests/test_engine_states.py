"""The embedded engine's states as the chats and the status see them (engine.backend.STATES), without building
vLLM: its start and stop are replaced by steps the test controls, so the order of states is what is judged."""

import asyncio
from types import SimpleNamespace

import pytest

from engine import presets
from engine.backend import CHANGING, STATES
from engine.errors import EngineStartError, PresetSwitchError


@pytest.fixture
def quiet_engine(tmp_path, monkeypatch):
    import engine.engine as module
    from engine.engine import ChatEngine
    from engine.settings import load_settings

    chat_engine = ChatEngine(load_settings(model=str(tmp_path), preset="cpu"))
    monkeypatch.setattr(module, "plan_start", lambda name, settings, held=0: SimpleNamespace(
        preset=presets.lookup(name, None), dtype="float32"))
    chat_engine.seen, chat_engine.refuse = [], set()

    async def launch(name, waking=False):  # a start: the preset runs, unless the test refuses it
        chat_engine.seen.append(("launch", name, chat_engine.state))
        await asyncio.sleep(0)
        if name in chat_engine.refuse:
            raise EngineStartError(f"'{name}' does not fit", "Choose a smaller preset.")
        chat_engine._llm, chat_engine.preset, chat_engine.dtype = SimpleNamespace(errored=False), plan(name), "float32"
        chat_engine.preset_name = name

    async def stop():
        chat_engine.seen.append(("stop", chat_engine.state))
        chat_engine._llm = None

    def plan(name):
        return presets.lookup(name, None)

    monkeypatch.setattr(chat_engine, "_launch", launch)
    monkeypatch.setattr(chat_engine, "_stop_engine", stop)
    return chat_engine


async def test_a_preset_switch_is_switching_from_its_checks_to_the_new_engine_then_ready(quiet_engine):
    assert quiet_engine.state == "stopped" and quiet_engine.state in STATES
    await quiet_engine._launch("cpu")
    assert quiet_engine.state == "ready"
    told = []

    async def before_stop():  # the other chats are told now: they see the engine switching
        told.append(quiet_engine.state)

    assert await quiet_engine.switch_preset("cpu-8bit", before_stop=before_stop)
    assert told == ["switching"]
    assert quiet_engine.seen[1:] == [("stop", "switching"), ("launch", "cpu-8bit", "switching")]
    assert quiet_engine.state == "ready" and quiet_engine.preset_name == "cpu-8bit"
    assert "switching" in CHANGING and "ready" not in CHANGING


async def test_a_failed_switch_brings_the_previous_preset_back_and_is_ready_again(quiet_engine):
    await quiet_engine._launch("cpu")
    quiet_engine.refuse.add("cpu-8bit")
    with pytest.raises(PresetSwitchError):
        await quiet_engine.switch_preset("cpu-8bit")
    assert [step[1] for step in quiet_engine.seen if step[0] == "launch"] == ["cpu", "cpu-8bit", "cpu"]
    assert quiet_engine.state == "ready" and quiet_engine.preset_name == "cpu"


async def test_the_same_preset_again_is_no_switch(quiet_engine):
    await quiet_engine._launch("cpu")
    assert not await quiet_engine.switch_preset("cpu")
    assert quiet_engine.state == "ready" and ("stop", "switching") not in quiet_engine.seen
