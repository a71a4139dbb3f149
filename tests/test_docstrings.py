"""Every example in s4tf's docstrings runs and prints what it shows.

Each module under ``s4tf/`` is one test. A module that needs an optional
package (JAX for the lazy backend, CuPy) is skipped, with the reason, when the
package is not installed, and runs when it is.
"""

from __future__ import annotations

import doctest
import importlib
import warnings
from pathlib import Path

import pytest

import s4tf

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
