"""The backend registry: module paths, and errors that say what to install only when that is it."""

from __future__ import annotations

import importlib

import pytest

from s4tf.backends import base


def test_every_backend_lives_in_its_folder_backend_module():
    for name in base.BACKEND_NAMES:
        assert base._MODULES[name] == f"s4tf.backends.{name}.backend"
    assert importlib.import_module("s4tf.backends.naive.backend").BACKEND.name == "naive"


def _failing_import(error):
    def import_module(name):
        raise error

    return import_module


def test_a_missing_extra_names_the_pip_extra(monkeypatch):
    monkeypatch.delitem(base._loaded, "cupy", raising=False)
    monkeypatch.setattr(base.importlib, "import_module",
                        _failing_import(ModuleNotFoundError("No module named 'cupyx'", name="cupyx")))
    with pytest.raises(ImportError, match=r"pip install 's4tf\[cuda\]'"):
        base.get_backend_object("cupy")


def test_a_broken_import_inside_s4tf_is_not_blamed_on_a_package(monkeypatch):
    monkeypatch.delitem(base._loaded, "cupy", raising=False)
    broken = ImportError("cannot import name 'columns' from 's4tf.backends.im2col'",
                         name="s4tf.backends.im2col")
    monkeypatch.setattr(base.importlib, "import_module", _failing_import(broken))
    with pytest.raises(ImportError) as info:
        base.get_backend_object("cupy")
    assert info.value is broken and "pip install" not in str(info.value)


# Issue 19, item 4: what code outside backends/ uses is declared on Backend and
# defined by every backend.
@pytest.mark.parametrize("name", base.BACKEND_NAMES)
def test_every_backend_defines_what_base_declares(name):
    import numpy as np

    from s4tf import dtypes

    if name == "xla":
        pytest.importorskip("jax")
    backend = base.get_backend_object(name)
    data = backend.asarray(np.array([1.0, 2.0]), dtypes.float32)
    assert isinstance(data, backend.array_type)
    copied = backend.copy(data)
    assert isinstance(copied, backend.array_type)
    assert backend.to_numpy(copied).tolist() == [1.0, 2.0]
    if backend.supports_inplace:
        assert backend.xp is not None and backend.owns_storage(copied)
        backend.add_inplace(copied, backend.asarray(np.ones(2), dtypes.float32))
        assert backend.to_numpy(data).tolist() == [1.0, 2.0]  # the copy was its own buffer
    else:
        assert backend.xp is None


def test_a_backend_that_forgets_array_type_fails_loudly():
    class Incomplete(base.Backend):
        name = "incomplete"

    with pytest.raises(AttributeError, match="array_type"):
        getattr(Incomplete(), "array_type")  # noqa: B009  (the read is the test)
    with pytest.raises(NotImplementedError):
        Incomplete().copy(None)
