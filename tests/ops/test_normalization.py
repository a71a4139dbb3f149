"""s4tf.nn.batch_norm: values, statistics, derivatives of every order and mode, errors."""

from __future__ import annotations

import numpy as np
import pytest

import s4tf
from s4tf.testing import check_gradients

RNG = np.random.default_rng(5)
X = RNG.normal(2.0, 3.0, size=(4, 3, 5))


def _tensors(axis):
    features = X.shape[axis]
    return (s4tf.Tensor(X, dtype=s4tf.float64),
            s4tf.Tensor(RNG.uniform(0.5, 2.0, features), dtype=s4tf.float64),
            s4tf.Tensor(RNG.normal(size=features), dtype=s4tf.float64))


def _output(axis, epsilon=0.1):
    def output(x, scale, offset):
        return s4tf.nn.batch_norm(x, scale, offset, axis=axis, epsilon=epsilon)[0]

    return output


def _everything(axis, epsilon=0.1):
    """A scalar of the output and both statistics: every result's derivative counts."""
    def everything(x, scale, offset):
        y, mean, variance = s4tf.nn.batch_norm(x, scale, offset, axis=axis, epsilon=epsilon)
        return (y * y * s4tf.sin(y)).sum() + (mean * variance).sum() + (variance ** 2).sum()

    return everything


@pytest.mark.parametrize("axis", [-1, 1, 0])
def test_values_and_statistics(backend, axis):
    x, scale, offset = _tensors(axis)
    y, mean, variance = s4tf.nn.batch_norm(x, scale, offset, axis=axis, epsilon=0.1)
    others = tuple(i for i in range(3) if i != axis % 3)
    kept = tuple(-1 if i == axis % 3 else 1 for i in range(3))
    expected = ((X - X.mean(others, keepdims=True)) / np.sqrt(X.var(others, keepdims=True) + 0.1)
                * scale.numpy().reshape(kept) + offset.numpy().reshape(kept))
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(mean.numpy(), X.mean(others), rtol=1e-12)
    np.testing.assert_allclose(variance.numpy(), X.var(others), rtol=1e-12)
    assert y.backend == mean.backend == backend


@pytest.mark.parametrize("axis", [-1, 1])
def test_first_and_second_derivatives_in_both_modes(backend, axis):
    check_gradients(_output(axis), *_tensors(axis), order=2)
    check_gradients(_everything(axis), *_tensors(axis), order=2)


def test_forward_over_forward_second_derivative(backend):
    # d2/ds2 of a loss along one direction of (x, scale, offset), by nested derivatives,
    # against central differences of the first derivative.
    x, scale, offset = _tensors(-1)
    dx = s4tf.Tensor(RNG.normal(size=X.shape), dtype=s4tf.float64)
    ds = s4tf.Tensor(RNG.normal(size=5), dtype=s4tf.float64)
    loss = _everything(-1)

    def along(t):
        return loss(x + dx * t, scale + ds * t, offset + ds * t)

    def first(t):
        return s4tf.derivative(t, of=along)

    second = s4tf.derivative(0.3, of=first)
    numeric = (float(first(0.3 + 1e-5)) - float(first(0.3 - 1e-5))) / 2e-5
    np.testing.assert_allclose(float(second), numeric, rtol=1e-5)


def test_third_order_reverse_derivative_of_a_scalar_path():
    # The second-derivative rules are themselves differentiable.
    x, scale, offset = _tensors(-1)
    direction = s4tf.Tensor(RNG.normal(size=X.shape), dtype=s4tf.float64)
    loss = _everything(-1)

    def second(t):
        inner = s4tf.derivative(of=lambda u: loss(x + direction * u, scale, offset))
        return s4tf.derivative(t, of=inner)

    third = s4tf.gradient(0.2, of=second)
    numeric = (float(second(0.2 + 1e-4)) - float(second(0.2 - 1e-4))) / 2e-4
    np.testing.assert_allclose(float(third), numeric, rtol=1e-4)


def test_float32_in_float32_out_and_ints_become_float32():
    x = s4tf.Tensor(X.astype(np.float32))
    y, mean, variance = s4tf.nn.batch_norm(x, s4tf.ones([5]), s4tf.zeros([5]))
    assert (y.dtype, mean.dtype, variance.dtype) == (s4tf.float32,) * 3
    counts = s4tf.Tensor(np.arange(12, dtype=np.int32).reshape(4, 3))
    y, mean, _ = s4tf.nn.batch_norm(counts, s4tf.ones([3]), s4tf.zeros([3]))
    assert y.dtype == s4tf.float32 and mean.tolist() == [4.5, 5.5, 6.5]


def test_errors_name_the_shapes_and_the_fix():
    x = s4tf.ones([2, 3, 4])
    with pytest.raises(ValueError, match=r"axis 3 is out of range .* shape \(2, 3, 4\)"):
        s4tf.nn.batch_norm(x, s4tf.ones([4]), s4tf.zeros([4]), axis=3)
    with pytest.raises(ValueError, match=r"must have shape \(4,\), the size of axis 2 .* got \(3,\)"):
        s4tf.nn.batch_norm(x, s4tf.ones([3]), s4tf.zeros([4]))
