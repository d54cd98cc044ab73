"""The house's rules, read from the source with `ast` (fast; nothing is imported or run).

- No import circles among the project's own modules, counting imports inside functions too: a circle that
  works only because one import waits inside a function is still a circle.
- engine/ never imports Chainlit, nor the packages above it (ui/, web/, api/, history/, app.py, ...): it is the
  ground floor, also for a user of the engine without the chat.
- app.py, wiring.py, ui/, web/ and history/ never import vLLM: the engine (and api/, which serves vLLM's own app)
  does that, on its own schedule.
- lifetime/ (what outlives `-w` reloads, background tasks) imports nothing of the project; no package imports a
  top-level module.
- Background tasks outside engine/ start through `lifetime.tasks.spawn`, which keeps them until they end.
- Chainlit beyond its public `cl.` API (its config, data layer, context, sign-in, server, sessions, sockets,
  emitter) is reached through chainlit_door/ only (and app.py's hooks), where tests/test_chainlit_patches.py and
  tests/test_chainlit_doors.py check each reach against the Chainlit installed.
- A chat's state lives in one object (ui/chat_state.py): the app keeps nothing in `cl.user_session`, whose keys
  Chainlit stores with the thread when the chat closes.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("engine", "ui", "web", "api", "history", "lifetime", "chainlit_door", "boot")
TOP_MODULES = ("app",)
ABOVE_THE_ENGINE = {"chainlit", "ui", "web", "api", "history", "app", "boot", "chainlit_door"}
WITHOUT_VLLM = ("app", "boot", "chainlit_door", "lifetime", "ui", "web", "history")


def project_files() -> dict[str, Path]:
    """Module name -> file, for the app's own modules (packages' __init__ under the package's name)."""
    files = {name: ROOT / f"{name}.py" for name in TOP_MODULES}
    for package in PACKAGES:  # subfolders too (ui/words/)
        for path in sorted((ROOT / package).rglob("*.py")):
            dotted = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            files[dotted.removesuffix(".__init__")] = path
    return files


def imported(path: Path) -> set[str]:
    """Every module name `path` imports, at any depth of its code (`from a import b` gives both a and a.b)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (a package's own __init__ left out: each says only what it holds)."""
    files = project_files()
    return {name: {other for other in imported(path) if other in files and other not in PACKAGES and other != name}
            for name, path in files.items()}


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle, as the modules along it, or None."""
    state: dict[str, str] = {}

    def visit(name: str, path: list[str]) -> list[str] | None:
        state[name] = "open"
        for other in sorted(graph[name]):
            if state.get(other) == "open":
                return [*path[path.index(other):], other] if other in path else [*path, other]
            if other not in state and (found := visit(other, [*path, other])):
                return found
        state[name] = "done"
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start, [start])):
            return found
    return None


def test_the_project_has_no_import_circles():
    graph = import_graph()
    assert {"app", "boot.wiring", "ui.chat_state", "web.guard", "api.gate", "history.layer"} <= graph.keys()
    found = cycle(graph)
    assert found is None, "an import circle: " + " -> ".join(found or [])


def test_the_circle_check_finds_a_circle_through_an_import_inside_a_function():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_the_engine_imports_nothing_above_it():
    for name, path in project_files().items():
        if name.split(".")[0] == "engine":
            above = {module for module in imported(path) if module.split(".")[0] in ABOVE_THE_ENGINE}
            assert not above, f"{path.relative_to(ROOT)} imports {sorted(above)}"


def test_the_process_holders_import_nothing_of_the_project_and_no_top_level_module_is_below_a_package():
    files = project_files()
    for name, path in files.items():
        project = {module for module in imported(path) if module in files and module.split(".")[0] != "lifetime"}
        if name.split(".")[0] == "lifetime":
            assert not project, f"{path.relative_to(ROOT)} imports {sorted(project)}: lifetime/ is below every package"
        elif "." in name or name in PACKAGES:
            top = {module for module in project if module in TOP_MODULES}
            assert not top, f"{path.relative_to(ROOT)} imports top-level {sorted(top)}: the top is for app.py alone"


def test_only_the_engine_and_the_api_import_vllm():
    for name, path in project_files().items():
        if name.split(".")[0] in WITHOUT_VLLM:
            vllm = {module for module in imported(path) if module.split(".")[0] == "vllm"}
            assert not vllm, f"{path.relative_to(ROOT)} imports {sorted(vllm)}"


# What the app changes in vLLM's own objects: the output handler's read, the request table, the kernel scan, how
# its processes start. engine/vllm_patches.py is the one module that touches them (each checked in test_vllm_seams).
VLLM_PATCHED = ("get_output_async", "outputs_queue", "output_processor", "_rebind_kernels", "set_executable",
                "VLLM_WORKER_MULTIPROC_METHOD")


def test_vllms_behaviour_is_changed_in_vllm_patches_only():
    for name, path in project_files().items():
        if name != "engine.vllm_patches":
            touched = [word for word in VLLM_PATCHED if word in path.read_text()]
            assert not touched, f"{path.relative_to(ROOT)} touches {touched}: do it in engine/vllm_patches.py"


# Chainlit beyond its public `cl.` API: its config, data layer, context, sign-in, server, sessions, sockets, emitter...
# Only its input widgets are public besides `cl.`; `cl.context` is the context reached by attribute.
CHAINLIT_PUBLIC = ("chainlit", "chainlit.input_widget")
CHAINLIT_DOOR = ("chainlit_door", "app")  # the door, and app.py's hooks


def chainlit_reaches(path: Path, root: Path = ROOT) -> list[str]:
    """Where `path` reaches Chainlit beyond its public API: `file:line name`, an import or a `cl.context` read."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("cl",
                                                                                                      "chainlit"):
            names = [f"chainlit.{node.attr}"] if node.attr in ("context", "server", "config", "data") else []
        found += [f"{path.relative_to(root)}:{node.lineno} {name}" for name in names
                  if name.split(".")[0] == "chainlit" and name not in CHAINLIT_PUBLIC]
    return found


def test_chainlit_is_reached_beyond_its_public_api_through_its_door_only():
    files = project_files()
    assert "ui.words" in files and "chainlit_door.sessions" in files, "every subfolder is read"
    outside = [reach for name, path in files.items() if name.split(".")[0] not in CHAINLIT_DOOR
               for reach in chainlit_reaches(path)]
    assert not outside, f"Chainlit reached outside chainlit_door/ (use the door): {outside}"
    inside = [reach for name, path in files.items() if name.startswith("chainlit_door.")
              for reach in chainlit_reaches(path)]
    for area in ("config", "data", "context", "auth", "server", "session", "socket", "emitter"):
        assert any(f" chainlit.{area}" in reach for reach in inside), f"the door no longer reaches chainlit.{area}"


def test_the_reach_finder_sees_imports_inside_functions_and_the_context_by_attribute(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import chainlit as cl\nfrom chainlit.input_widget import Slider\n\ndef f():\n"
                      "    from chainlit.data import get_data_layer\n    return cl.context.session, cl.Message\n")
    assert [reach.split(" ", 1)[1] for reach in chainlit_reaches(sample, tmp_path)] == ["chainlit.data",
                                                                                        "chainlit.context"]


def session_writes() -> list[str]:
    """Where the app's code writes into Chainlit's user session: `cl.user_session.set(...)`, or `user_sessions`."""
    found = []
    for path in project_files().values():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "set" \
                    and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "user_session":
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            elif isinstance(node, ast.ImportFrom) and any(alias.name == "user_sessions" for alias in node.names):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_a_chats_state_is_kept_in_its_chat_object_not_in_chainlits_user_session():
    assert not session_writes(), f"kept in Chainlit's user session (stored with the thread): {session_writes()}"


def test_background_tasks_go_through_spawn_which_keeps_them_until_they_end():
    """The loop keeps only weak references to tasks: one started with a bare create_task may vanish mid-way."""
    for name, path in project_files().items():
        if name.split(".")[0] == "engine" or name == "lifetime.tasks":
            continue
        bare = [node.lineno for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute) and node.func.attr in ("create_task", "ensure_future")]
        assert not bare, f"{path.relative_to(ROOT)}:{bare} starts a task without tasks.spawn"


TURN_WRITES = ("append", "extend", "insert", "pop", "clear", "remove", "sort", "reverse")


def turn_writes(path: Path, root: Path = ROOT) -> list[str]:
    """Where `path` changes some object's `.turns`: assigned, augmented, sliced into, deleted from, or mutated."""
    found = []

    def is_turns(node) -> bool:
        while isinstance(node, ast.Subscript):
            node = node.value
        return isinstance(node, ast.Attribute) and node.attr == "turns"

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in TURN_WRITES:
            targets = [node.func.value]
        if any(is_turns(target) for target in targets):
            found.append(node.lineno)
    return [f"{path.relative_to(root)}:{line}" for line in sorted(found)]


def test_a_chats_turns_have_one_writer():
    """ChatState's own methods (ui/chat_state.py) are the one place a chat's turns change."""
    writes = [where for name, path in project_files().items() if name.split(".")[0] in ("ui", "web", "app")
              and name != "ui.chat_state" for where in turn_writes(path)]
    assert not writes, f"a chat's turns changed outside ui/chat_state.py: {writes}"
    assert turn_writes(ROOT / "ui" / "chat_state.py"), "the finder sees ChatState's own writes"


def test_the_turn_write_finder_sees_each_kind_of_change(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("chat.turns += [a]\ndel chat.turns[-2:]\nchat.turns[:] = old\nchat.turns.append(a)\n"
                      "chat.turns = []\nn = len(chat.turns)\nlast = chat.turns[-1]\n")
    assert turn_writes(sample, tmp_path) == [f"sample.py:{line}" for line in (1, 2, 3, 4, 5)]
