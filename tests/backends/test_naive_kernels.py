"""The naive backend's own kernels: the branch-free ``where`` selects exactly what ``np.where`` does."""

from __future__ import annotations

import numpy as np
import pytest

import s4tf
from s4tf.backends.naive.backend import BACKEND
from s4tf.backends.naive.kernels import SELECT_MIN_SIZE, NumPyKernels

KERNELS = NumPyKernels(np)
RNG = np.random.default_rng(3)


def _awkward(dtype, shape):
    """Random values of ``dtype`` with the bit patterns a select must keep: NaN, infinities, -0.0."""
    x = RNG.standard_normal(shape).astype(dtype)
    flat = x.reshape(-1)
    flat[:5] = [np.nan, -np.nan, np.inf, -np.inf, -0.0]
    return x


def _same_bits(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.atleast_1d(got).view(np.uint8),
                                  np.atleast_1d(want).view(np.uint8))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("which", ["arrays", "broadcast", "zero_else", "zero_then",
                                   "negative_zero_else", "scalar_then", "row_condition"])
def test_where_matches_numpy_bit_for_bit(dtype, which):
    shape = (64, 96)  # above SELECT_MIN_SIZE: the bit arithmetic, not np.where
    x, y = _awkward(dtype, shape), _awkward(dtype, shape)
    condition = RNG.random(shape) < 0.5
    x_arg, y_arg, c_arg = {
        "arrays": (x, y, condition),
        "broadcast": (x, y[0], condition),
        "zero_else": (x, 0.0, condition),
        "zero_then": (0.0, y, condition),
        "negative_zero_else": (x, -0.0, condition),
        "scalar_then": (2.5, y, condition),
        "row_condition": (x, y, condition[0]),
    }[which]
    got = KERNELS.where(c_arg, x_arg, y_arg)
    _same_bits(got, np.where(c_arg, x_arg, y_arg))
    assert not np.shares_memory(got, x) and not np.shares_memory(got, y)


def test_where_falls_back_to_numpy_where_off_its_domain():
    small = RNG.standard_normal(SELECT_MIN_SIZE - 1)
    ints = RNG.integers(-5, 5, size=10_000)
    complex_values = RNG.standard_normal(10_000) * 1j
    for x in (small, ints, complex_values):
        condition = RNG.random(x.shape) < 0.5
        _same_bits(KERNELS.where(condition, x, x[::-1]), np.where(condition, x, x[::-1]))


def test_relu_uses_it_and_stays_exact():
    assert isinstance(BACKEND.kernels, NumPyKernels)
    x = _awkward(np.float32, (100, 100))
    with s4tf.backend("naive"):
        out = s4tf.relu(s4tf.Tensor(x)).numpy()
    _same_bits(out, np.where(x > 0, x, np.float32(0)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("axis", [(0,), (0, 1), (0, 1, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_leading_axis_sums_match_numpy(dtype, axis, keepdims):
    x = _awkward(dtype, (8, 16, 12, 5))
    x.reshape(-1)[:5] = 1.0  # no NaN here: finite sums to compare
    got = KERNELS.reduce_sum(x, axis=axis, keepdims=keepdims)
    want = np.sum(x.astype(np.float64), axis=axis, keepdims=keepdims)
    assert got.dtype == dtype and got.shape == want.shape
    tolerance = 1e-4 if dtype == np.float32 else 1e-11  # sums of up to 1536 normal draws
    np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)


def test_leading_axis_sums_propagate_nan_and_infinity():
    x = np.ones((64, 80, 3))
    x[5, 7, 0], x[9, 1, 1], x[2, 2, 2], x[3, 3, 2] = np.nan, np.inf, np.inf, -np.inf
    with np.errstate(invalid="ignore"):  # inf - inf, as np.sum warns too
        got = KERNELS.reduce_sum(x, axis=(0, 1), keepdims=False)
    assert np.isnan(got[0]) and got[1] == np.inf and np.isnan(got[2])


def test_other_sums_are_numpy_sums():
    x = RNG.standard_normal((40, 50, 3))
    for axis in [(1,), (2,), (1, 2), (0, 1, 2)]:
        _same_bits(KERNELS.reduce_sum(x, axis=axis, keepdims=False), np.sum(x, axis=axis))
    ints = RNG.integers(0, 9, size=(100, 60))
    _same_bits(KERNELS.reduce_sum(ints, axis=(0,), keepdims=True), np.sum(ints, 0, keepdims=True))
