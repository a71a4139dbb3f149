"""The package's layers (HOW_IT_WORKS, "Layers"): every import runs down them.

The imports are read from the source, so one written anywhere in a file counts,
inside a function too. A module may import its own package and the layers below
its own; nothing imports upward, and no modules import each other in a circle
(a module reaching its own package's ``__init__`` is the one exception, as the
package's face re-exports what it holds).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import s4tf

PACKAGE = Path(s4tf.__file__).parent

# Bottom first. A unit is a top-level module or subpackage of s4tf.
LAYERS = [
    ("foundation", {"dtypes", "_sizes", "user_frames", "hooks", "liveness"}),
    ("arrays and errors", {"backends", "non_differentiable"}),
    ("tensor", {"tensor"}),
    ("structure", {"tree", "creation", "datasets"}),
    ("ops", {"ops", "random", "cow", "transfer", "distributed"}),
    ("values", {"autodiff", "differentiable", "learning_phase", "activations", "nn",
                "initializers"}),
    ("building blocks", {"layers", "losses", "optimizers", "checkpoint", "testing"}),
    ("applications", {"models", "summary", "training_loop", "capture"}),
    ("face", {"__init__"}),
]
LAYER_OF = {unit: index for index, (_, units) in enumerate(LAYERS) for unit in units}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, package: str | None = None) -> set[str]:
    """The s4tf modules ``path`` imports anywhere in the file, as absolute dotted names.

    ``from . import x`` names the module ``x`` when it is one, else the package.
    """
    if package is None:
        name = module_name(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[: len(base) - node.level + 1]
            module = ".".join(base + [node.module]) if node.level and node.module else (
                ".".join(base) if node.level else node.module or "")
            for alias in node.names:
                found.add(_existing(f"{module}.{alias.name}") or module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.split(".")[0] == "s4tf"}


def _existing(name: str) -> str | None:
    relative = Path(*name.split(".")[1:])
    if (PACKAGE / relative).with_suffix(".py").exists() or (PACKAGE / relative / "__init__.py").exists():
        return name
    return None


def unit_of(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


SOURCES = sorted(PACKAGE.rglob("*.py"))


def test_every_unit_has_a_layer():
    units = {unit_of(module_name(path)) for path in SOURCES}
    assert units <= set(LAYER_OF), f"give {sorted(units - set(LAYER_OF))} a layer in LAYERS"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_run_down_the_layers(path):
    here = unit_of(module_name(path))
    upward = sorted(
        name for name in imported_modules(path)
        if unit_of(name) != here and LAYER_OF[unit_of(name)] >= LAYER_OF[here]
    )
    assert not upward, (
        f"{path.relative_to(PACKAGE)} (layer {LAYERS[LAYER_OF[here]][0]!r}) imports {upward}, "
        "which are not below it; move the shared piece down or the importer up"
    )


def test_no_modules_import_each_other_in_a_circle():
    graph = {}
    for path in SOURCES:
        name = module_name(path)
        ancestors = {name.rsplit(".", k)[0] for k in range(1, name.count(".") + 1)}
        graph[name] = {m for m in imported_modules(path) if m != name and m not in ancestors}
    circles = [c for c in _strongly_connected(graph) if len(c) > 1]
    assert not circles, f"import circles: {circles}"


def _strongly_connected(graph):
    """Tarjan's algorithm, iteratively; yields each component as a sorted list."""
    index, low, on_stack, stack, order = {}, {}, set(), [], [0]
    components = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = order[0]
        order[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = order[0]
                    order[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(sorted(component))
    return components


def test_the_reader_sees_imports_inside_functions_and_relative_modules(tmp_path):
    # The checks above are only as good as this reader.
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from ..autodiff import reverse\n    from . import tracer\n")
    found = imported_modules(probe, package="s4tf.ops")
    assert {"s4tf.autodiff.reverse", "s4tf.ops.tracer"} <= found


def test_a_circle_is_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert [c for c in _strongly_connected(graph) if len(c) > 1] == [["a", "b", "c"]]
