"""Initializers: shapes, dtypes, bounds, variances, seeds."""

import numpy as np
import pytest

import s4tf
from s4tf import initializers as init

ALL = [init.glorot_uniform, init.glorot_normal, init.he_uniform, init.he_normal,
       init.lecun_uniform, init.lecun_normal, init.truncated_normal, init.orthogonal,
       init.zeros, init.ones, init.constant(0.25)]


@pytest.mark.parametrize("fn", ALL, ids=lambda f: f.__name__)
def test_shape_dtype_and_seed(fn):
    a = fn((3, 3, 4, 8), dtype=s4tf.float64, seed=7)
    b = fn((3, 3, 4, 8), dtype=s4tf.float64, seed=7)
    assert a.shape == (3, 3, 4, 8) and a.dtype == s4tf.float64
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert fn([5, 2]).dtype == s4tf.float32


@pytest.mark.parametrize("fn,limit", [
    (init.glorot_uniform, (6 / (300 + 200)) ** 0.5),
    (init.he_uniform, (6 / 300) ** 0.5),
    (init.lecun_uniform, (3 / 300) ** 0.5),
])
def test_uniform_bounds_and_variance(fn, limit):
    w = fn((300, 200), dtype=s4tf.float64, seed=0).numpy()
    assert np.abs(w).max() <= limit
    assert w.var() == pytest.approx(limit ** 2 / 3, rel=0.02)


@pytest.mark.parametrize("fn,variance", [
    (init.glorot_normal, 2 / (300 + 200)),
    (init.he_normal, 2 / 300),
    (init.lecun_normal, 1 / 300),
])
def test_truncated_normal_variance_is_corrected(fn, variance):
    w = fn((300, 200), dtype=s4tf.float64, seed=0).numpy()
    assert w.var() == pytest.approx(variance, rel=0.03)
    # Truncated at two (uncorrected) standard deviations.
    assert np.abs(w).max() <= 2 * (variance ** 0.5) / 0.87962566103423978 + 1e-12


def test_conv_fans_include_the_receptive_field():
    w = init.glorot_uniform((5, 5, 6, 16), dtype=s4tf.float64, seed=0).numpy()
    assert np.abs(w).max() <= (6 / (25 * 6 + 25 * 16)) ** 0.5


def test_truncated_normal_within_two_stddev():
    t = init.truncated_normal((10000,), seed=1, mean=1.0, stddev=0.5).numpy()
    assert t.min() >= 0.0 and t.max() <= 2.0


def test_orthogonal_rows_or_columns_orthonormal():
    tall = init.orthogonal((6, 3), dtype=s4tf.float64, seed=0).numpy()
    np.testing.assert_allclose(tall.T @ tall, np.eye(3), atol=1e-12)
    wide = init.orthogonal((3, 6), dtype=s4tf.float64, seed=0).numpy()
    np.testing.assert_allclose(wide @ wide.T, np.eye(3), atol=1e-12)
    with pytest.raises(ValueError, match="rank >= 2"):
        init.orthogonal((4,))


def test_constant_zeros_ones():
    assert init.constant(3.0)((2,)).tolist() == [3.0, 3.0]
    assert init.zeros((2,)).tolist() == [0.0, 0.0]
    assert init.ones((1, 2)).tolist() == [[1.0, 1.0]]
    with pytest.raises(TypeError, match="float dtype"):
        init.zeros((2,), dtype=s4tf.int32)
