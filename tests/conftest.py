"""Shared fixtures: ``backend`` runs a test on every available backend.

CuPy runs over its stand-in (``S4TF_CUPY_STANDIN=numpy``:
:mod:`s4tf.backends.cupy.standin`, NumPy behind CuPy's host boundary) when CuPy
is not installed, so its code paths are tested on machines without a GPU.

Every run ends with a list of the skipped tests and their reasons, and with
``CI`` set only tests marked ``@pytest.mark.gpu`` may skip (``skip_listing``).
"""

from __future__ import annotations

import importlib.util
import os

import pytest
import skip_listing

if importlib.util.find_spec("cupy") is None:
    os.environ.setdefault("S4TF_CUPY_STANDIN", "numpy")
os.environ.setdefault("S4TF_CACHE_DIR", "")  # no persistent XLA cache in the user's home

import s4tf  # noqa: E402  (after choosing the CuPy stand-in)


def pytest_configure(config):
    skip_listing.register(config)


@pytest.fixture(autouse=True)
def _default_backend_restored():
    """Each test starts on the backend the run started on: a test that calls an
    example's ``main`` (which calls ``s4tf.set_backend``) must not move the tests after it."""
    previous = s4tf.get_backend()
    yield
    if s4tf.get_backend() != previous:
        s4tf.set_backend(previous)


HAVE_JAX = importlib.util.find_spec("jax") is not None
BACKENDS = ["naive", "cupy"] + (["xla", "jax"] if HAVE_JAX else [])

# The jax backend runs JAX's kernels eagerly, one compiled kernel per op and shape:
# the same kernels the xla backend records, so these modules, whose batching rules
# and low-precision cases are written with primitives and run the same on every
# backend, leave it out (they took 116 of the suite's 560 s on it). The op suite,
# the values and gradients of every primitive, the layers, the loop and the
# interop tests run on jax as on the others.
LEFT_OUT_ON_JAX = {"test_op_batching.py", "test_low_precision.py", "test_vmap_nn.py"}


def pytest_generate_tests(metafunc):
    """Run every test that uses ``backend`` once per backend (see ``LEFT_OUT_ON_JAX``)."""
    if "backend" not in metafunc.fixturenames:
        return
    for marker in metafunc.definition.iter_markers("parametrize"):
        names = marker.args[0]
        if "backend" in (names.replace(" ", "").split(",") if isinstance(names, str) else names):
            return  # the test names its own backends
    names = BACKENDS
    if metafunc.definition.path.name in LEFT_OUT_ON_JAX:
        names = [name for name in BACKENDS if name != "jax"]
    metafunc.parametrize("backend", names, indirect=True)


@pytest.fixture
def backend(request):
    """The name of the backend this test runs on; new tensors are created there."""
    name = request.param
    previous = s4tf.get_backend()
    s4tf.set_backend(name)
    try:
        yield name
    finally:
        s4tf.barrier()
        s4tf.set_backend(previous)
