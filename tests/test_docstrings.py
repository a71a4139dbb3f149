"""Every example in s4tf's docstrings runs and prints what it shows.

Each module under ``s4tf/`` is one test. A module that needs an optional
package (JAX for the lazy backend, CuPy) is skipped, with the reason, when the
package is not installed, and runs when it is.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import pydoc
import types
import warnings
from pathlib import Path

import pytest

import s4tf
from s4tf.backends.base import get_backend_object
from s4tf.ops.primitive import Primitive

PACKAGE = Path(s4tf.__file__).parent
# The extras of pyproject.toml: s4tf works without them, their modules do not.
OPTIONAL_PACKAGES = {"jax", "jaxlib", "cupy", "cupyx"}
OPTION_FLAGS = doctest.ELLIPSIS


def module_names() -> list[str]:
    """Every module of the package, found on disk (importing it is the test's job)."""
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def import_or_skip(name: str):
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        missing = (error.name or "").partition(".")[0]
        if missing in OPTIONAL_PACKAGES:
            pytest.skip(f"{name} needs the optional package {missing}, which is not installed")
        raise


def run_examples(tests: list[doctest.DocTest]) -> tuple[int, str]:
    """Run ``tests``; return the number of examples and the report of the failures."""
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=OPTION_FLAGS)
    attempted = 0
    for test in tests:
        attempted += runner.run(test, out=report.append).attempted
    return attempted, "".join(report)


def examples_of(module) -> list[doctest.DocTest]:
    # globs=None: each docstring sees a copy of its module's globals, as pytest's
    # --doctest-modules gives, so examples may use the module's own names.
    finder = doctest.DocTestFinder(exclude_empty=True)
    return [test for test in finder.find(module, module.__name__) if test.examples]


@pytest.fixture
def isolated_globals():
    """Examples may set the backend, seed the random stream or change warning filters."""
    backend, state = s4tf.get_backend(), s4tf.random.get_state()
    with warnings.catch_warnings():
        yield
    s4tf.barrier()
    s4tf.set_backend(backend)
    s4tf.random.set_state(state)


@pytest.mark.parametrize("name", module_names())
def test_docstring_examples(name, isolated_globals):
    module = import_or_skip(name)
    _, failures = run_examples(examples_of(module))
    assert not failures, f"docstring examples of {name} failed:\n{failures}"


def test_the_walk_finds_the_examples():
    found = {name: len(examples_of(importlib.import_module(name)))
             for name in ("s4tf.checkpoint.files", "s4tf.activations", "s4tf.datasets.mnist")}
    assert all(count > 0 for count in found.values()), found
    assert "s4tf.backends.xla.lazy" in module_names() and "s4tf" in module_names()


def test_a_wrong_expected_output_fails():
    source = '''
    >>> 1 + 1
    3
    '''
    test = doctest.DocTestParser().get_doctest(source, {}, "wrong", "wrong.py", 0)
    attempted, failures = run_examples([test])
    assert attempted == 1
    assert "Expected:\n    3\nGot:\n    2" in failures


def test_only_a_missing_optional_package_skips(monkeypatch):
    def absent(package):
        def fail(name):
            raise ModuleNotFoundError(f"No module named {package!r}", name=package)
        return fail

    monkeypatch.setattr(importlib, "import_module", absent("jax.numpy"))
    with pytest.raises(pytest.skip.Exception, match="optional package jax"):
        import_or_skip("s4tf.backends.xla.kernels")
    monkeypatch.setattr(importlib, "import_module", absent("safetensors"))
    with pytest.raises(ModuleNotFoundError):
        import_or_skip("s4tf.checkpoint.files")


# The public surface: s4tf, its op library and its public modules (s4tf.layers, ...).
PUBLIC_MODULES = {"s4tf": s4tf, "s4tf.ops": s4tf.ops, **{
    f"s4tf.{name}": getattr(s4tf, name) for name in s4tf.__all__
    if isinstance(getattr(s4tf, name), types.ModuleType)}}


def _has_own_docstring(value) -> bool:
    """Functions, classes, modules and primitives document themselves; data (a dtype) its type."""
    doc = getattr(value, "__doc__", None)
    if not doc or not doc.strip():
        return False
    if isinstance(value, type | types.ModuleType | types.FunctionType) or not callable(value):
        return True
    return doc != type(value).__doc__  # a callable object: its own, not its class's


@pytest.mark.parametrize("name", sorted(PUBLIC_MODULES))
def test_every_exported_name_exists_and_has_a_docstring(name):
    module = PUBLIC_MODULES[name]
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names what {name} does not define: {missing}"
    undocumented = [n for n in module.__all__ if not _has_own_docstring(getattr(module, n))]
    assert not undocumented, f"{name} exports names without a docstring of their own: {undocumented}"


def test_the_top_level_exports_every_public_name_it_imports():
    # __all__ is read from s4tf's namespace: whatever it imports is exported, except
    # the submodules that importing binds as a side effect.
    public = {n for n, v in vars(s4tf).items()
              if not n.startswith("_") and not isinstance(v, types.ModuleType)}
    assert public <= set(s4tf.__all__), sorted(public - set(s4tf.__all__))
    modules = {n for n in s4tf.__all__ if isinstance(getattr(s4tf, n), types.ModuleType)}
    assert {"layers", "optimizers", "nn", "xla"} <= modules
    assert not modules & {"ops", "tensor", "autodiff", "backends", "cow", "capture"}


def reachable_primitives() -> dict[str, Primitive]:
    """Every primitive a user reaches as ``s4tf.<name>``, ``s4tf.ops.<name>``, ``s4tf.nn.<name>``, ..."""
    found = {}
    for name, module in PUBLIC_MODULES.items():
        for attribute in module.__all__:
            value = getattr(module, attribute)
            if isinstance(value, Primitive):
                found[f"{name}.{attribute}"] = value
    return found


def test_every_reachable_primitive_documents_itself_like_a_function():
    primitives = reachable_primitives()
    assert "s4tf.exp" in primitives and "s4tf.ops.scatter_add" in primitives
    kernels = get_backend_object("naive").kernels
    problems = []
    for path, op in sorted(primitives.items()):
        doc = op.__doc__ or ""
        if doc == Primitive.__doc__ or ">>>" not in doc:
            problems.append(f"{path}: no docstring of its own with an example")
            continue
        # Its signature is its kernel's (arrays positional, static parameters keywords).
        kernel = inspect.signature(getattr(kernels, op.name))
        if inspect.signature(op) != kernel:
            problems.append(f"{path}: signature {inspect.signature(op)}, kernel's {kernel}")
        page = pydoc.render_doc(op, renderer=pydoc.plaintext)
        if f"{op.__name__}{kernel}" not in page or "class Primitive" in page:
            problems.append(f"{path}: help() shows\n{page[:300]}")
    assert not problems, "\n".join(problems)


def test_the_examples_of_primitives_are_run():
    tests = {test.name for test in examples_of(importlib.import_module("s4tf.ops.elementwise"))}
    assert {"s4tf.ops.elementwise.exp", "s4tf.ops.elementwise.where"} <= tests
