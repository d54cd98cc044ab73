"""Nothing above engine/ reads an engine object's private members, read from the source with `ast` (fast).

The engine's contract (engine/backend.py) is read-only properties and methods; each backend keeps its state in
underscored attributes that only it changes. Code outside engine/ (app.py, boot/, ui/, web/, api/, history/,
bench/, scripts/, harness/) that reads `x._name`, where `_name` is a private attribute or method defined by one of
engine/'s classes, reaches past the contract: it gets a public way instead (a property, a method, a constructor
argument). A file's own classes may use the same private names on themselves (`self._lock`); tests/ are the
engine's own white-box tests and are not read.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUTSIDE = ("app.py", "boot", "ui", "web", "api", "history", "bench", "scripts", "harness")


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def defined_privates(source: str) -> set[str]:
    """The private members the classes of `source` define: methods named `_x`, class attributes `_x`, and every
    `self._x` they assign."""
    names = set()
    for cls in (node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ClassDef)):
        for statement in cls.body:  # class attributes
            targets = statement.targets if isinstance(statement, ast.Assign) else \
                [statement.target] if isinstance(statement, ast.AnnAssign) else []
            names.update(t.id for t in targets if isinstance(t, ast.Name) and _private(t.id))
        for node in ast.walk(cls):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _private(node.name):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _private(node.attr) \
                    and isinstance(node.value, ast.Name) and node.value.id == "self":
                names.add(node.attr)
    return names


def engine_privates() -> set[str]:
    return set().union(*(defined_privates(path.read_text()) for path in sorted((ROOT / "engine").glob("*.py"))))


def reads_of(source: str, privates: set[str]) -> list[tuple[int, str]]:
    """(line, `x._name`) for each use of a private of `privates` on something other than `self` or `cls`, less
    the names the file's own classes define."""
    own = defined_privates(source)
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in privates and node.attr not in own:
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            found.append((node.lineno, f"{ast.unparse(node.value)}.{node.attr}"))
    return found


def outside_files() -> list[Path]:
    files = []
    for place in OUTSIDE:
        path = ROOT / place
        files += [path] if path.suffix == ".py" else sorted(path.rglob("*.py"))
    return [path for path in files if path.exists()]


def test_the_finder_sees_a_private_read_and_lets_a_public_one_and_a_file_s_own_pass():
    engine_like = "class Engine:\n    _kept = 1\n    def __init__(self):\n        self._host = None\n" \
                  "    def _launch(self): ...\n"
    privates = defined_privates(engine_like)
    assert privates == {"_kept", "_host", "_launch"}, "not __init__"
    reaching = "def tokens(engine):\n    return engine._host.tokenizer, engine.host, engine._launch()\n"
    assert reads_of(reaching, privates) == [(2, "engine._host"), (2, "engine._launch")]
    assert reads_of("def f(engine):\n    return engine.host.llm\n", privates) == []
    own = "class Client:\n    def __init__(self):\n        self._host = 1\n    def f(self, other):\n" \
          "        return self._host + other._host\n"
    assert reads_of(own, privates) == [], "the file's own class uses the name itself"


def test_the_engine_s_classes_define_the_privates_that_matter():
    assert {"_host", "_admission", "_engine_kwargs", "_state", "_enter", "_preset", "_requests"} <= engine_privates()


def test_nothing_outside_engine_reads_an_engine_object_s_private_members():
    privates = engine_privates()
    found = [f"{path.relative_to(ROOT)}:{line}: {text}" for path in outside_files()
             for line, text in reads_of(path.read_text(), privates)]
    assert not found, "reaching past the engine's contract (give it a public property or method):\n" + \
        "\n".join(found)
