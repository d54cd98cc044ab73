"""The embedded engine's status as the status panel shows it: what runs where, what it holds, how busy it is.

Read from the engine's own state and vLLM's in-process gauges; it never starts or wakes anything.
"""

from engine import build, presets, sizing
from engine.reports import Status


def engine_status(engine) -> Status:
    """`engine` is engine/engine.py's ChatEngine."""
    preset = engine.preset
    gauges = build.gauges() if engine.ready else {}
    return Status(
        state=engine.state, preset=preset.name if preset else engine.preset_name,
        purpose=preset.purpose if preset else "",
        device=device_text(engine),
        max_model_len=preset.max_model_len if preset else None,
        needs_gib=footprint_gib(engine),
        memory_used_gib=engine.held_memory_gib,
        kv_cache_usage=gauges.get("vllm:kv_cache_usage_perc"),
        requests_running=int(gauges.get("vllm:num_requests_running", 0)),
        requests_waiting=int(gauges.get("vllm:num_requests_waiting", 0)),
        chat_requests=engine.chat_requests, api_sequences=engine.api_sequences, asleep_since=engine.asleep_since,
        user_share=engine.admission.share, waiting_for_share=sum(engine.admission.waiting().values()),
        problem=str(engine.failure) if engine.failure is not None else "",
    )


def device_text(engine) -> str:
    if engine.device is None:
        return "not started"
    gpus = engine.settings.gpus if engine.device.kind == "cuda" else 1
    return engine.device.name if gpus == 1 else \
        f"{gpus} × {engine.device.name} ({engine.settings.parallel} parallel)"


def footprint_gib(engine) -> float | None:
    """What the running preset takes on the GPU, by engine/sizing.py; None on the CPU."""
    if engine.preset is None or engine.preset.device != "cuda":
        return None
    return sizing.footprint(engine.preset, sizing.weights_bytes(engine.settings.model)).total / presets.GIB
