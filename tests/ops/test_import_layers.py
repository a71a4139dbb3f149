"""The op library's imports run one way: tensor <- ops <- autodiff.

``tensor.py`` imports no op (the op library installs Tensor's methods), and
nothing below the differentiation engines imports them, not even inside a
function. Read from the source, so an import added anywhere in a file counts.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

import s4tf

PACKAGE = pathlib.Path(s4tf.__file__).parent
BELOW_AUTODIFF = sorted(
    [*(PACKAGE / "ops").glob("*.py"), PACKAGE / "tensor.py", PACKAGE / "creation.py",
     PACKAGE / "random.py", PACKAGE / "non_differentiable.py", PACKAGE / "user_frames.py"])


def imported_modules(path: pathlib.Path, package: str | None = None) -> set[str]:
    """Every s4tf module ``path`` imports, anywhere in the file, as absolute dotted names."""
    if package is None:
        package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.split(".")[0] == "s4tf"}


@pytest.mark.parametrize("path", BELOW_AUTODIFF, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_nothing_below_the_engines_imports_autodiff(path):
    upward = sorted(m for m in imported_modules(path) if m.startswith("s4tf.autodiff"))
    assert not upward, f"{path.name} imports {upward}; autodiff builds on ops, not the reverse"


def test_tensor_imports_no_op():
    upward = sorted(m for m in imported_modules(PACKAGE / "tensor.py") if m.startswith("s4tf.ops"))
    assert not upward, f"tensor.py imports {upward}; ops install Tensor's methods instead"


def test_the_import_reader_sees_function_level_imports(tmp_path):
    # The check above is only as good as this reader: an import inside a function counts.
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from ..autodiff import reverse\n    return reverse\n")
    assert "s4tf.autodiff.reverse" in imported_modules(probe, package="s4tf.ops")
