"""The engine's GPU paths on a real GPU: vLLM's engine core spawned through the app's engine-process script, in a
session of its own; the GPU memory the status reports; vLLM's sleep mode when the idle timer asks; a Stop; a
switch and a shutdown that give the memory back. The CPU suite runs the same states with a forked core.

Runs where `CHAT_TEST_DEVICE=cuda` and a CUDA GPU is there (`bash bench/gpu/run-034.sh start tests34` on the H200);
skipped elsewhere.
"""

import asyncio
import os

import psutil
import pytest

from engine import hardware
from engine.engine import ChatEngine
from engine.errors import EngineDiedError
from engine.presets import GIB
from engine.settings import Sampling, load_settings
from harness.presets import DEVICE, TEST_PRESET

pytestmark = pytest.mark.skipif(DEVICE != "cuda" or hardware.gpu_used_bytes() is None,
                                reason="a GPU test: CHAT_TEST_DEVICE=cuda on a machine with a CUDA GPU")

HELLO = [{"role": "user", "content": "Hello"}]


async def generated(engine: ChatEngine, max_tokens: int) -> int:
    stats = None
    async for item in engine.stream(HELLO, Sampling(max_tokens=max_tokens)):
        stats = item if not isinstance(item, str) else stats
    return stats.generated_tokens


def alive(pids) -> list[psutil.Process]:
    found = []
    for pid in pids:
        try:
            process = psutil.Process(pid)
            if process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except psutil.NoSuchProcess:
            pass
    return found


@pytest.fixture(scope="module")
async def gpu_engine(tiny_model):
    baseline = hardware.gpu_used_bytes()
    # idle minutes on, as a user's engine has them: it is built with vLLM's sleep mode (the timer never fires here)
    engine = ChatEngine(load_settings(model=str(tiny_model), preset="custom", custom_preset=TEST_PRESET,
                                      idle_minutes=60))
    await engine.ensure_started()
    yield engine, baseline
    engine.shutdown()


async def test_the_engine_core_is_spawned_through_the_apps_script_in_a_session_of_its_own(gpu_engine):
    engine, _ = gpu_engine
    processes = alive(engine.host.pids)
    assert processes, "the engine's processes are known"
    for process in processes:
        assert os.getsid(process.pid) != os.getsid(0), f"{process.cmdline()} shares the app's session"
    assert engine.device.kind == "cuda" and engine.status().state == "ready"


async def test_the_status_reports_the_gpu_memory_the_engine_holds(gpu_engine):
    engine, baseline = gpu_engine
    held = engine.held_memory_gib
    assert held is not None and held > 0.25, "at least the KV cache the preset asks for"
    assert abs(held - (hardware.gpu_used_bytes() - baseline) / GIB) < 0.1


async def test_a_stop_ends_the_reply_early(gpu_engine):
    engine, _ = gpu_engine
    request_id, count = "gpu-stop", 0
    async for item in engine.stream(HELLO, Sampling(max_tokens=1500), request_id=request_id):
        if isinstance(item, str):
            count += 1
            if count == 2:
                await engine.abort(request_id)
    assert count < 100, "the reply went on after the stop"
    assert await generated(engine, 10) == 10


async def test_sleep_gives_the_gpu_memory_back_and_a_message_wakes_it(gpu_engine):
    engine, _ = gpu_engine
    awake = engine.held_memory_gib
    pids = set(engine.host.pids)
    assert await engine.fall_asleep()
    assert engine.state == "asleep" and alive(pids), "a GPU engine sleeps in vLLM's sleep mode, its core alive"
    assert engine.held_memory_gib < awake - 0.2, f"asleep {engine.held_memory_gib:.2f} GiB, awake {awake:.2f}"
    await engine.ensure_started()
    assert engine.state == "ready" and set(engine.host.pids) == pids
    assert await generated(engine, 10) == 10


async def test_an_engine_built_without_sleep_mode_stops_when_asked_to_sleep(tiny_model):
    """With the idle timer off (`CHAT_IDLE_MINUTES=0`) vLLM is built without sleep mode, whose sleep would keep all
    of the engine's memory: asked to sleep, it stops and gives the memory back, and the next message starts it."""
    baseline = hardware.gpu_used_bytes()
    engine = ChatEngine(load_settings(model=str(tiny_model), preset="custom", custom_preset=TEST_PRESET,
                                      idle_minutes=0))
    try:
        await engine.ensure_started()
        pids = set(engine.host.pids)
        assert await engine.fall_asleep()
        assert engine.state == "asleep" and not alive(pids) and engine.held_memory_gib is None
        assert await asyncio.to_thread(hardware.wait_gpu_memory_back, baseline) <= 64 * 2**20
        assert await generated(engine, 10) == 10
    finally:
        engine.shutdown()


async def test_a_switch_ends_the_old_engine_and_gives_its_memory_back(gpu_engine):
    engine, baseline = gpu_engine
    old = set(engine.host.pids)
    await engine.switch_preset("4gb")
    assert not alive(old), "the old engine's processes must be gone"
    assert engine.preset.name == "4gb" and await generated(engine, 10) == 10
    await engine.switch_preset("custom")
    assert engine.preset.name == "custom" and await generated(engine, 10) == 10
    assert abs(engine.held_memory_gib - (hardware.gpu_used_bytes() - baseline) / GIB) < 0.1


async def test_a_killed_engine_is_said_and_restarts(gpu_engine):
    engine, _ = gpu_engine
    for _ in range(3):
        try:
            async for _item in engine.stream(HELLO, Sampling(max_tokens=1500)):
                for process in alive(engine.host.pids):
                    process.kill()
        except EngineDiedError as error:
            assert "restarts by itself" in str(error)
            break
    else:
        pytest.fail("in 3 tries no reply met the killed engine")
    await engine.ensure_started()
    assert await generated(engine, 10) == 10


async def test_a_shutdown_leaves_no_process_and_no_gpu_memory(gpu_engine):
    engine, baseline = gpu_engine
    pids = set(engine.host.pids)
    engine.shutdown()
    assert not alive(pids)
    held = await asyncio.to_thread(hardware.wait_gpu_memory_back, baseline)
    assert held <= 64 * 2**20, f"{held / 2**20:.0f} MiB still held"
