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
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


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
