"""What a user installs is what the tests run: each Python runs its lock's versions, the two locks differ only where
requirements/lock-differences.txt says why, and the GPU lock (every GPU user's install, in .venv-gpu) runs every
test that needs no GPU device, here on a machine without one.
"""

import importlib
import os
import re
import subprocess

import pytest

from harness import locks

# Tests that must pass on the GPU build, not skip: the proof of which build ran, the app's imports, what vLLM's
# engine core imports to build the model (a package the lock leaves out fails here, without a GPU), both model
# layouts' tokenizers and chat templates (a new chat, Continue, a reopened chat), the API gate, the history, the
# library, and vLLM's seams that need no device.
MUST_PASS_ON_GPU = [
    "tests/test_locks.py::test_this_python_runs_the_lock_of_its_vllm_build",
    "tests/test_locks.py::test_every_module_of_the_app_imports",
    "tests/test_engine_imports.py::test_every_module_the_engine_core_imports_to_build_this_model_is_installed",
    "tests/test_engine_imports.py::test_the_walk_fails_when_a_package_the_path_needs_is_left_out",
    "tests/test_hooks.py::",
    "tests/test_layout.py::test_the_project_has_no_import_circles",
    "tests/test_model_layouts.py::test_both_layouts_tokenize_alike_with_ernies_ids_and_render_its_template",
    "tests/test_model_layouts.py::test_a_reopened_chat_is_rendered_alike_by_both_layouts",
    "tests/test_model_layouts.py::test_the_first_layouts_class_is_served_under_its_new_name",
    "tests/test_api_gate.py::",
    "tests/test_history_tables.py::",
    "tests/test_library.py::",
    "tests/test_vllm_seams.py::test_the_api_is_built_as_vllms_own_server_builds_it",
    "tests/test_vllm_seams.py::test_every_engine_argument_a_preset_makes_is_one_vllm_takes",
]


def test_the_two_locks_pin_one_version_of_each_package_unless_a_reason_is_listed():
    cpu, gpu = locks.pins("cpu"), locks.pins("gpu")
    differ = {name: f"cpu {cpu[name]}, gpu {gpu[name]}" for name in cpu.keys() & gpu.keys() if cpu[name] != gpu[name]}
    allowed = locks.allowed_differences()
    unexplained = {name: versions for name, versions in differ.items() if name not in allowed}
    assert not unexplained, f"the locks differ without a reason in {locks.DIFFERENCES.name}: {unexplained}"
    stale = sorted(allowed.keys() - differ.keys())
    assert not stale, f"{locks.DIFFERENCES.name} lists packages the locks now pin alike: {stale}"
    assert all(len(reason) > 20 for reason in allowed.values()), "each difference says why"
    assert gpu["protobuf"] == cpu["protobuf"], "the first layout's tokenizer needs one protobuf for both"


def test_this_python_runs_the_lock_of_its_vllm_build():
    build = locks.installed_build()
    assert build == os.environ.get("CHAT_TEST_BUILD", build), "the run was asked of the other build"
    off = [f"{name}: lock {want}, here {have}" for name, want, have in locks.compare(build, locks.installed())
           if want != have]
    assert not off, f"this Python is not the {build} lock as pinned (run `bash scripts/setup.sh --dev`): {off}"


def test_every_module_of_the_app_imports():
    packages = ["engine", "api", "web", "history", "ui"]
    # app.py itself: tests/test_hooks.py imports it as a server would
    names = ["lifetime.runtime", "lifetime.tasks", "chainlit_door.patches", "chainlit_door.sessions",
             "chainlit_door.server", "boot.wiring"] + [
        f"{package}.{path.stem}" for package in packages for path in sorted((locks.ROOT / package).glob("*.py"))
        if path.stem != "__init__"]
    for name in names:
        importlib.import_module(name)
    assert len(names) > 60


@pytest.mark.slow
def test_the_gpu_lock_runs_every_test_that_needs_no_gpu_device():
    if locks.installed_build() == "gpu":
        pytest.skip("this Python is the GPU build: the suite runs on it directly")
    python = locks.GPU_VENV / "bin" / "python"
    assert python.exists(), f"no GPU lock in {locks.GPU_VENV}: `bash scripts/setup.sh --dev` installs it"
    run = subprocess.run([str(python), "-m", "pytest", "-m", "not slow", "-p", "no:cacheprovider", "-q", "-rA",
                          "-o", "addopts="], cwd=locks.ROOT, capture_output=True, text=True,
                         env={**os.environ, "CHAT_TEST_BUILD": "gpu"})
    out = run.stdout + run.stderr
    failed = re.findall(r"^(?:FAILED|ERROR) .*$", out, re.M)
    assert run.returncode == 0, f"the GPU lock's run failed: {failed}\n{out[-6000:]}"
    passed = set(re.findall(r"^PASSED (\S+)", out, re.M))
    missing = [name for name in MUST_PASS_ON_GPU if not any(test.startswith(name) for test in passed)]
    assert not missing, f"these did not pass on the GPU build (skipped or not run): {missing}\n{out[-4000:]}"
    skips = re.findall(r"^SKIPPED \[\d+\] \S+: (.*)$", out, re.M)
    assert all(reason == locks.CPU_BUILD_ONLY for reason in skips), f"skipped on the GPU build: {skips}"
    assert len(passed) > 200, f"only {len(passed)} tests passed on the GPU build"
