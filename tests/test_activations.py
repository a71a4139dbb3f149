"""Activations: values against NumPy, S4TF's derivative conventions, gradient checks."""

import math

import numpy as np
import pytest

import s4tf
from s4tf.testing import check_gradients

X = np.array([-3.0, -1.0, -0.25, 0.5, 2.0, 7.0])


def _gelu(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def _softplus(x):
    return np.log1p(np.exp(x))


ALPHA, SCALE = 1.6732632423543772, 1.0507009873554805
REFERENCES = {
    "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.clip(x, 0, 6),
    "leaky_relu": lambda x: np.where(x > 0, x, 0.2 * x),
    "elu": lambda x: np.where(x > 0, x, np.expm1(x)),
    "selu": lambda x: SCALE * np.where(x > 0, x, ALPHA * np.expm1(x)),
    "gelu": _gelu,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "log_sigmoid": lambda x: -_softplus(-x),
    "softplus": _softplus,
    "softsign": lambda x: x / (1 + np.abs(x)),
    "swish": lambda x: x / (1 + np.exp(-x)),
    "hard_sigmoid": lambda x: np.clip(x + 3, 0, 6) / 6,
    "hard_swish": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "mish": lambda x: x * np.tanh(_softplus(x)),
    "tanh": np.tanh,
    "identity": lambda x: x,
    "softmax": lambda x: np.exp(x) / np.exp(x).sum(),
    "log_softmax": lambda x: x - np.log(np.exp(x).sum()),
}


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_values_match_numpy(name):
    out = getattr(s4tf, name)(s4tf.Tensor(X, dtype=s4tf.float64))
    np.testing.assert_allclose(out.numpy(), REFERENCES[name](X), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_gradients(name):
    # Points away from kinks (0, 6, -3 for the hard functions) where derivatives exist.
    x = s4tf.Tensor([-2.2, -0.7, 0.3, 1.9, 4.1], dtype=s4tf.float64)
    check_gradients(getattr(s4tf, name), x)


def test_relu_family_derivative_is_zero_at_the_kink():
    zero = s4tf.Tensor([0.0], dtype=s4tf.float64)
    for fn in (s4tf.relu, s4tf.relu6):
        assert s4tf.gradient(zero, of=lambda x, fn=fn: fn(x).sum()).tolist() == [0.0]
    assert s4tf.gradient(zero, of=lambda x: s4tf.leaky_relu(x).sum()).tolist() == [pytest.approx(0.2)]
    assert s4tf.gradient(6.0, of=s4tf.relu6) == 0.0


def test_defaults_follow_s4tf():
    assert s4tf.leaky_relu(s4tf.Tensor([-1.0])).item() == pytest.approx(-0.2)
    # tanh approximation, not the erf form (0.8413447).
    assert s4tf.gelu(s4tf.Tensor([1.0], dtype=s4tf.float64)).item() == pytest.approx(0.8411920, abs=1e-6)
    assert s4tf.hard_sigmoid(s4tf.Tensor([1.5])).item() == pytest.approx(0.75)


def test_large_inputs_stay_finite_and_have_finite_gradients():
    x = s4tf.Tensor([-1e4, -50.0, 50.0, 1e4])
    for fn in (s4tf.softplus, s4tf.log_sigmoid, s4tf.elu, s4tf.selu, s4tf.mish):
        value, grad = s4tf.value_with_gradient(x, of=lambda t, fn=fn: fn(t).sum())
        assert np.isfinite(value.item()), fn.__name__
        assert np.isfinite(grad.numpy()).all(), fn.__name__
    np.testing.assert_allclose(s4tf.softplus(x).numpy(), [0.0, 1.9287e-22, 50.0, 1e4], rtol=1e-4)
