"""The embedded engine's states as the chats and the status see them (engine.backend.STATES), without building
vLLM: its start and stop are replaced by steps the test controls, so the order of states is what is judged."""

import asyncio
from types import SimpleNamespace

import pytest

from engine import presets
from engine.backend import CHANGING, STATES
from engine.errors import EngineStartError, PresetSwitchError


class QuietHost:
    """Stands in for engine/hosting.py's VllmHost: runs at once, holds nothing, sleeps on the device if asked."""

    def __init__(self, on_device: bool):
        self.running, self.asleep, self.sleeps_on_device, self.llm, self.pids = True, False, on_device, None, set()

    def held_bytes(self):
        return 0

    async def sleep(self):
        self.asleep = True

    async def wake_up(self):
        self.asleep = False

    async def abort_every_request(self):
        return True

    def shutdown(self):
        self.running = False


@pytest.fixture
def quiet_engine(tmp_path, monkeypatch):
    import engine.engine as module
    from engine.engine import ChatEngine
    from engine.settings import load_settings

    chat_engine = ChatEngine(load_settings(model=str(tmp_path), preset="cpu"))
    monkeypatch.setattr(module, "plan_start", lambda name, settings, held=0: SimpleNamespace(
        preset=presets.lookup(name, None), dtype="float32"))
    chat_engine.seen, chat_engine.refuse, chat_engine.on_device = [], set(), False

    async def launch(name, waking=False):  # a start: the preset runs, unless the test refuses it
        chat_engine.seen.append(("launch", name, chat_engine.state))
        await asyncio.sleep(0)
        if name in chat_engine.refuse:
            raise EngineStartError(f"'{name}' does not fit", "Choose a smaller preset.")
        chat_engine._host = QuietHost(chat_engine.on_device)
        chat_engine._preset, chat_engine._dtype = presets.lookup(name, None), "float32"
        chat_engine._preset_name, chat_engine._asleep_since = name, None

    async def stop():
        chat_engine.seen.append(("stop", chat_engine.state))
        chat_engine._host = None

    monkeypatch.setattr(chat_engine, "_launch", launch)
    monkeypatch.setattr(chat_engine, "_stop_host", stop)
    return chat_engine


async def test_a_preset_switch_is_switching_from_its_checks_to_the_new_engine_then_ready(quiet_engine):
    assert quiet_engine.state == "stopped" and quiet_engine.state in STATES
    await quiet_engine.ensure_started()
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
    await quiet_engine.ensure_started()
    quiet_engine.refuse.add("cpu-8bit")
    with pytest.raises(PresetSwitchError):
        await quiet_engine.switch_preset("cpu-8bit")
    assert [step[1] for step in quiet_engine.seen if step[0] == "launch"] == ["cpu", "cpu-8bit", "cpu"]
    assert quiet_engine.state == "ready" and quiet_engine.preset_name == "cpu"


async def test_the_same_preset_again_is_no_switch(quiet_engine):
    await quiet_engine.ensure_started()
    assert not await quiet_engine.switch_preset("cpu")
    assert quiet_engine.state == "ready" and ("stop", "switching") not in quiet_engine.seen


async def test_a_start_that_fails_is_failed_and_said_again_until_a_retry(quiet_engine):
    quiet_engine.refuse.add("cpu")
    with pytest.raises(EngineStartError):
        await quiet_engine.ensure_started()
    assert quiet_engine.state == "failed" and quiet_engine.seen == [("launch", "cpu", "starting")]
    with pytest.raises(EngineStartError):
        await quiet_engine.ensure_started()
    assert len(quiet_engine.seen) == 1, "a remembered failure is raised without starting again"
    quiet_engine.refuse.clear()
    await quiet_engine.ensure_started(retry=True)
    assert quiet_engine.state == "ready"


@pytest.mark.parametrize("on_device", [False, True], ids=["cpu-stops", "gpu-sleep-mode"])
async def test_an_idle_engine_falls_asleep_and_the_next_start_wakes_it(quiet_engine, on_device):
    quiet_engine.on_device = on_device
    await quiet_engine.ensure_started()
    assert await quiet_engine.fall_asleep()
    assert quiet_engine.state == "asleep" and quiet_engine.asleep_since is not None
    assert (quiet_engine.host is not None) == on_device, "on the CPU sleeping is stopping; on a GPU vLLM sleeps"
    await quiet_engine.ensure_started()
    assert quiet_engine.state == "ready" and quiet_engine.asleep_since is None
    launches = [step for step in quiet_engine.seen if step[0] == "launch"]
    assert launches == [("launch", "cpu", "starting")] + ([] if on_device else [("launch", "cpu", "waking")])


async def test_a_wake_that_fails_leaves_it_asleep_and_the_next_message_tries_again(quiet_engine):
    await quiet_engine.ensure_started()
    assert await quiet_engine.fall_asleep()
    quiet_engine.refuse.add("cpu")  # say the memory was taken meanwhile
    with pytest.raises(EngineStartError):
        await quiet_engine.ensure_started()
    assert quiet_engine.state == "asleep" and quiet_engine.failure is None
    quiet_engine.refuse.clear()
    await quiet_engine.ensure_started()
    assert quiet_engine.state == "ready"


async def test_a_busy_engine_does_not_fall_asleep(quiet_engine):
    await quiet_engine.ensure_started()
    async with quiet_engine.admit("chat"):
        assert not await quiet_engine.fall_asleep()
    assert quiet_engine.state == "ready"


async def test_a_switch_while_asleep_to_the_preset_that_sleeps_keeps_it_asleep(quiet_engine):
    quiet_engine.on_device = True
    await quiet_engine.ensure_started()
    assert await quiet_engine.fall_asleep()
    assert not await quiet_engine.switch_preset("cpu")
    assert quiet_engine.state == "asleep"
    assert await quiet_engine.switch_preset("cpu-8bit")
    assert quiet_engine.state == "ready" and quiet_engine.preset_name == "cpu-8bit"


def test_every_state_is_one_the_contract_names_and_a_step_outside_the_table_raises(quiet_engine):
    from engine.engine import TRANSITIONS

    assert set(TRANSITIONS) | {"unreachable"} == set(STATES)
    assert all(target in TRANSITIONS for targets in TRANSITIONS.values() for target in targets)
    with pytest.raises(RuntimeError, match="from stopped to asleep"):
        quiet_engine._enter("asleep")


async def test_a_shutdown_stops_it_from_any_state(quiet_engine):
    await quiet_engine.ensure_started()
    host = quiet_engine.host
    quiet_engine.shutdown()
    assert quiet_engine.state == "stopped" and quiet_engine.host is None and not host.running


def test_shutdown_is_a_step_of_the_table_from_every_state():
    from engine.engine import TRANSITIONS

    assert all(state == "stopped" or "stopped" in steps for state, steps in TRANSITIONS.items()), TRANSITIONS


async def test_a_shutdown_from_another_thread_waits_for_the_step_in_progress(quiet_engine):
    import threading

    await quiet_engine.ensure_started()
    with quiet_engine._stepping:  # a step in progress holds the state's lock
        stopping = threading.Thread(target=quiet_engine.shutdown)
        stopping.start()
        stopping.join(0.2)
        assert stopping.is_alive() and quiet_engine.state == "ready", "the shutdown waits for the lock"
    stopping.join(5)
    assert not stopping.is_alive() and quiet_engine.state == "stopped" and quiet_engine.host is None
