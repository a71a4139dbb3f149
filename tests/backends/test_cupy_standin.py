"""The CuPy stand-in keeps CuPy's host boundary, so host/device mix-ups fail without a GPU.

With NumPy itself standing in, a kernel calling ``np.`` on device arrays, or
allocating on the host, passed; on a GPU it raises. These tests pin the rules
that make such code fail here as it does under CuPy, and what CuPy allows.
"""

import numpy as np
import pytest

import s4tf
from s4tf.backends.base import get_backend_object
from s4tf.backends.cupy import standin as xp

IMPLICIT = "Implicit conversion to a NumPy array is not allowed"


@pytest.fixture
def a():
    return xp.asarray(np.arange(6.0).reshape(2, 3))


@pytest.mark.gpu
def test_the_test_suite_runs_cupy_on_the_standin():
    backend = get_backend_object("cupy")
    if not getattr(backend.xp, "is_standin", False):
        pytest.skip("real CuPy is installed")
    assert backend.xp is xp and backend.array_type is xp.ndarray
    assert type(s4tf.Tensor([1.0]).to("cupy")._data) is xp.ndarray


@pytest.mark.parametrize("convert", [np.asarray, np.array, lambda v: np.ascontiguousarray(v)])
def test_implicit_conversion_to_numpy_raises_as_in_cupy(a, convert):
    with pytest.raises(TypeError, match=IMPLICIT):
        convert(a)


def test_explicit_transfers_work(a):
    host = a.get()
    assert type(host) is np.ndarray and host.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert type(xp.asnumpy(a)) is np.ndarray
    host[0, 0] = 99.0  # a copy: the device array is unchanged
    assert a[0, 0].item() == 0.0
    assert float(a.sum()) == 15.0 and int(a[1, 2]) == 5 and bool(a[0, 1])


@pytest.mark.parametrize("mix", [
    lambda a: a + np.ones(3),                                   # host operand
    lambda a: np.ones(3) * a,                                   # host allocation, then mixed
    lambda a: xp.add(a, np.ones(3)),
    lambda a: xp.concatenate([a, np.ones((1, 3))]),
    lambda a: xp.matmul(a, np.ones((3, 1))),
    lambda a: np.lib.stride_tricks.as_strided(a, (2, 2), (8, 8)),  # NumPy-only view
])
def test_host_arrays_in_device_code_raise(a, mix):
    with pytest.raises(TypeError, match="Unsupported type|Implicit conversion"):
        mix(a)


def test_numpy_functions_dispatch_to_the_standin_as_to_cupy(a):
    scratch = np.empty_like(a)
    assert type(scratch) is xp.ndarray
    out = np.sqrt(a, out=scratch)
    assert out is scratch
    np.copyto(scratch, a)
    scratch *= 2
    assert (scratch.get() == 2 * a.get()).all()
    assert type(np.maximum(a, 1.0)) is xp.ndarray


def test_results_are_device_arrays_zero_d_where_numpy_gives_scalars(a):
    for result in (a.sum(), a[0, 1], xp.max(a), a.mean(), (a > 2).any()):
        assert type(result) is xp.ndarray and result.shape == ()


def test_indexing_takes_host_indices_and_values_as_cupy_does(a):
    assert a[np.array([1, 0])].get()[0].tolist() == [3.0, 4.0, 5.0]
    a[0] = np.array([7.0, 8.0, 9.0])
    a[xp.asarray([1]), 0] += 1.0
    assert a.get().tolist() == [[7, 8, 9], [4, 4, 5]]


def test_views_know_their_base_and_only_owners_own(a):
    backend = get_backend_object("cupy")
    assert a.base is None and a.flags.owndata and backend.owns_storage(a)
    for view in (a[1:], a.reshape(3, 2), a.T):
        assert view.base is not None and not backend.owns_storage(view)
    assert xp.asarray(a) is a and xp.ascontiguousarray(a) is a  # no new owner of the same memory
    assert xp.array(a) is not a and backend.owns_storage(xp.array(a))
    assert not hasattr(a.flags, "writeable")  # CuPy arrays are always writable


def test_a_kernel_allocating_on_the_host_fails_on_the_standin():
    # What the stand-in exists to catch: this passed when NumPy itself stood in.
    class HostBuffer(type(get_backend_object("cupy").kernels)):
        def window_sum_transpose(self, g, *, input_shape, window, strides, padding):
            buffer = np.zeros(input_shape, dtype=g.dtype)  # the planted bug: np, not xp
            buffer[:, ::strides[0], ::strides[1]] += g
            return buffer

    kernels = HostBuffer(xp)
    g = xp.ones((1, 2, 2, 1))
    with pytest.raises(TypeError):
        kernels.window_sum_transpose(g, input_shape=(1, 4, 4, 1), window=(2, 2), strides=(2, 2),
                                     padding=((0, 0), (0, 0)))
    right = type(get_backend_object("cupy").kernels)(xp).window_sum_transpose(
        g, input_shape=(1, 4, 4, 1), window=(2, 2), strides=(2, 2), padding=((0, 0), (0, 0)))
    assert type(right) is xp.ndarray and float(right.sum()) == 16.0


def test_arrays_are_not_shared_by_leaked_references(a):
    import sys

    before = sys.getrefcount(a)
    for _ in range(3):
        a * 2 + np.float32(1)
        np.sqrt(a)
        a[0]
    # Copy-on-write reads reference counts: an op must not keep its inputs alive.
    assert sys.getrefcount(a) == before
