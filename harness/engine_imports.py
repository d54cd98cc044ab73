"""What vLLM's engine core imports while it builds this model, imported here without a device: a package that the
lock leaves out and that path needs then fails at once, on any machine, instead of at the first engine start on a
user's card.

Python imports a module's top-level imports by itself; what it cannot see without running the engine are the
imports inside functions (vLLM imports many things where it uses them: the GPU warm-up imports the Qwen3-VL model
for every model, and that needed torchvision). So the build path is walked by reading source: from the modules the
engine core runs (ROOTS), every `import` at any depth is collected (not those under `if TYPE_CHECKING:`); a target
inside the build-path packages (FOLLOWED) is read in turn, a target outside them is imported (its own top-level
imports come with it) but not read further. Each target is then imported, and only one error counts as a missing
package: ModuleNotFoundError for a module that is not installed. A library that needs the GPU's driver to load
(an ImportError or OSError naming a `.so`) is the device's business, not the lock's, and is reported apart.

    python -m harness.engine_imports                      # prints the walk, exits 1 when a package is missing
    python -m harness.engine_imports --without torchvision  # as if the lock left torchvision out
"""

import ast
import importlib
import importlib.util
import sys
from dataclasses import dataclass, field

# Where the engine core of each build starts: the core, its worker and model runner, the warm-ups it runs, the
# loader, the model's class, and the multimodal registry the core consults for every model.
ROOTS = {
    "gpu": ["vllm.v1.engine.core", "vllm.v1.worker.gpu_worker", "vllm.v1.worker.gpu.model_runner",
            "vllm.model_executor.warmup.kernel_warmup", "vllm.model_executor.model_loader",
            "vllm.model_executor.models.ernie45", "vllm.multimodal"],
    "cpu": ["vllm.v1.engine.core", "vllm.v1.worker.cpu_worker", "vllm.v1.worker.cpu_model_runner",
            "vllm.model_executor.model_loader", "vllm.model_executor.models.ernie45", "vllm.multimodal"],
}
# Modules whose function-level imports are followed: the engine core's own code on the way to a ready model. The
# CPU worker overrides the GPU worker's warm-up, so on the CPU build only its own modules are followed.
_SHARED = ("vllm.v1.engine.core", "vllm.model_executor.model_loader", "vllm.model_executor.models.ernie45",
           "vllm.multimodal.registry")
FOLLOWED = {
    "gpu": _SHARED + ("vllm.v1.worker", "vllm.model_executor.warmup"),
    "cpu": _SHARED + ("vllm.v1.worker.cpu_worker", "vllm.v1.worker.cpu_model_runner", "vllm.v1.worker.cpu"),
}
# Imports on the followed path that this app never reaches, each with why: the branch that imports them is taken
# only for a setting the app never makes (engine/build.py makes every engine argument).
NOT_ON_THIS_PATH = {
    "ray": "Ray's distributed executor (distributed_executor_backend='ray'); the app runs one process per engine",
    "runai_model_streamer": "the Run:ai streamer's load formats (load_format='runai_streamer*')",
    "tensorizer": "serialized tensors (load_format='tensorizer')",
    "fastsafetensors": "load_format='fastsafetensors'",
    "instanttensor": "load_format='instanttensor'",
}


@dataclass
class Walk:
    imported: list[str] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)      # target -> the missing module's error
    device_only: dict[str, str] = field(default_factory=dict)  # target -> error that names a native library
    excused: dict[str, str] = field(default_factory=dict)      # target -> NOT_ON_THIS_PATH's reason


def _followed(name: str, build: str) -> bool:
    return any(name == root or name.startswith(root + ".") for root in FOLLOWED[build])


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports_in(module: str) -> set[str]:
    """Every module `module`'s source imports, at any depth, as absolute names (TYPE_CHECKING blocks left out)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return set()
    tree = ast.parse(open(spec.origin, encoding="utf-8").read(), spec.origin)
    package = module if spec.submodule_search_locations else module.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = importlib.util.resolve_name("." * node.level + (node.module or ""), package) if node.level \
                else node.module
            found.add(base)
            # `from package import submodule` imports the submodule: try each name as one
            found.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _installed(top: str) -> bool:
    if top in sys.modules and sys.modules[top] is None:  # left out with --without
        return False
    return importlib.util.find_spec(top) is not None


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
    except Exception:  # a parent package that fails to import: the import below reports it
        return True


def walk(build: str) -> Walk:
    """Reads the build path from ROOTS[build] and imports every module it names."""
    result, seen, queue, targets = Walk(), set(), list(ROOTS[build]), set(ROOTS[build])
    while queue:
        module = queue.pop()
        if module in seen:
            continue
        seen.add(module)
        try:
            names = _imports_in(module)
        except (ImportError, ValueError, SyntaxError):
            continue
        targets.update(names)
        for name in names:
            if _followed(name, build) and name not in seen:
                queue.append(name)
    for target in sorted(targets):
        _import(target, result)
    return result


def _import(target: str, result: Walk) -> None:
    top = target.split(".")[0]
    if top in NOT_ON_THIS_PATH:
        result.excused[target] = NOT_ON_THIS_PATH[top]
        return
    if "." in target and not _is_module(target):
        return  # `from module import name` of a name that is not a module: its module is a target of its own
    try:
        importlib.import_module(target)
        result.imported.append(target)
    except ModuleNotFoundError as error:
        if error.name and not _installed(error.name.split(".")[0]):
            result.missing[target] = f"{type(error).__name__}: {error}"
        else:
            result.device_only[target] = f"{type(error).__name__}: {error}"
    except (ImportError, OSError) as error:
        result.device_only[target] = f"{type(error).__name__}: {error}"
    except Exception as error:  # a module that runs device code at import: not the lock's business
        result.device_only[target] = f"{type(error).__name__}: {error}"


def main(argv: list[str]) -> int:
    from harness.locks import installed_build

    if argv[:1] == ["--without"]:
        for package in argv[1:]:
            sys.modules[package] = None  # an import of it now fails as a module that is not installed
    build = installed_build()
    result = walk(build)
    print(f"engine-imports ({build}): {len(result.imported)} imported, {len(result.device_only)} need a device,"
          f" {len(result.excused)} off this path, {len(result.missing)} missing")
    for target, error in sorted(result.device_only.items()):
        print(f"  needs a device: {target}: {error[:200]}")
    for target, error in sorted(result.missing.items()):
        print(f"  MISSING: {target}: {error}")
    return 1 if result.missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
