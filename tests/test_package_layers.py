"""The package's layers (HOW_IT_WORKS, "Layers"): every import runs down them.

And no unit reads another unit's private names: what units share has a name
without a leading underscore in its home module.

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
    ("arrays and errors", {"backends", "non_differentiable", "precision"}),
    ("tensor", {"tensor"}),
    ("structure", {"tree", "creation", "datasets"}),
    ("ops", {"ops", "random", "cow", "transfer", "distributed"}),
    ("values", {"autodiff", "differentiable", "learning_phase", "activations", "nn",
                "initializers"}),
    ("building blocks", {"layers", "losses", "optimizers", "checkpoint", "testing", "freezing", "interop"}),
    ("captured steps", {"capture"}),
    ("applications", {"models", "summary", "training_loop", "tying", "exporting"}),
    ("public addresses", {"callbacks"}),
    ("face", {"__init__"}),
]
LAYER_OF = {unit: index for index, (_, units) in enumerate(LAYERS) for unit in units}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package_of(path: Path) -> str:
    name = module_name(path)
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _from_module(node: ast.ImportFrom, package: str) -> str:
    """The absolute module an ``ImportFrom`` reads from."""
    base = package.split(".")
    if node.level:
        base = base[: len(base) - node.level + 1]
        return ".".join(base + [node.module]) if node.module else ".".join(base)
    return node.module or ""


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def imported_modules(path: Path, package: str | None = None) -> set[str]:
    """The s4tf modules ``path`` imports anywhere in the file, as absolute dotted names.

    ``from . import x`` names the module ``x`` when it is one, else the package.
    """
    if package is None:
        package = _package_of(path)
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            module = _from_module(node, package)
            for alias in node.names:
                found.add(_existing(f"{module}.{alias.name}") or module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.split(".")[0] == "s4tf"}


def private_names_read(path: Path, package: str | None = None) -> list[tuple[int, str]]:
    """``(line, "s4tf.module._name")`` for each private name ``path`` reads from another unit.

    Two spellings are seen: ``from x import _name`` and ``module._name`` where
    ``module`` was bound by an import of an s4tf module (``from .. import
    dtypes as _dtypes`` then ``_dtypes._BY_NUMPY``). A unit may read its own
    private names.
    """
    if package is None:
        package = _package_of(path)
    here = unit_of(f"{package}.{path.stem}" if path.name != "__init__.py" else package)
    tree = ast.parse(path.read_text())
    modules: dict[str, str] = {}  # local name -> the s4tf module it is bound to
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = _from_module(node, package)
            if module.split(".")[0] != "s4tf":
                continue
            for alias in node.names:
                as_module = _existing(f"{module}.{alias.name}")
                if as_module:
                    modules[alias.asname or alias.name] = as_module
                if _is_private(alias.name) and unit_of(as_module or module) != here:
                    found.append((node.lineno, f"{module}.{alias.name}"))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name.split(".")[0] == "s4tf":
                    modules[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in modules and _is_private(node.attr)
                and unit_of(modules[node.value.id]) != here):
            found.append((node.lineno, f"{modules[node.value.id]}.{node.attr}"))
    return sorted(found)


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


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_unit_reads_another_units_private_names(path):
    where = str(path.relative_to(PACKAGE))
    read = private_names_read(path)
    assert not read, "\n".join(
        f"s4tf/{where}:{line} reads {name.rpartition('.')[2]!r} of {name.rpartition('.')[0]}, "
        "a private name of another unit; give it a name without the underscore in its "
        "home module (documented there) and import that" for line, name in read
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


def test_the_private_name_reader_sees_both_spellings_and_spares_the_own_unit(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from .. import dtypes as _dtypes\n"
        "from ..tensor import Tensor, _hidden\n"
        "from .shapes import _own\n"
        "def f():\n"
        "    from ..tree.flatten import _LATE\n"
        "    return _dtypes._TABLE, _dtypes.as_dtype, Tensor._wrap\n"
    )
    found = private_names_read(probe, package="s4tf.ops")
    assert found == [(2, "s4tf.tensor._hidden"), (5, "s4tf.tree.flatten._LATE"),
                     (6, "s4tf.dtypes._TABLE")]
