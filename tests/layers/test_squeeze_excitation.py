"""SqueezeExcitation: values against NumPy, configurable parts, gradients, errors."""

import numpy as np
import pytest

import s4tf
from s4tf import layers
from s4tf.testing import check_gradients

F64 = s4tf.float64


def _with_biases(se):
    """``se`` with non-zero biases, so that their derivatives are exercised."""
    return s4tf.replace(
        se,
        fc1=s4tf.replace(se.fc1, bias=s4tf.random.normal(se.fc1.bias.shape, dtype=F64, seed=3)),
        fc2=s4tf.replace(se.fc2, bias=s4tf.random.normal(se.fc2.bias.shape, dtype=F64, seed=4)),
    )


def test_values_match_numpy():
    s4tf.random.seed(0)
    se = _with_biases(layers.SqueezeExcitation(6, 3, activation=s4tf.relu, gate=s4tf.hard_sigmoid,
                                               dtype=F64))
    x = np.random.default_rng(1).normal(size=(2, 4, 5, 6))
    w1, b1 = se.fc1.filter.numpy()[0, 0], se.fc1.bias.numpy()
    w2, b2 = se.fc2.filter.numpy()[0, 0], se.fc2.bias.numpy()
    hidden = np.maximum(x.mean(axis=(1, 2)) @ w1 + b1, 0.0)
    gate = np.clip(hidden @ w2 + b2 + 3.0, 0.0, 6.0) / 6.0
    want = x * gate[:, None, None, :]
    np.testing.assert_allclose(se(s4tf.Tensor(x)).numpy(), want, rtol=1e-12)


def test_fields_and_parameter_count():
    se = layers.SqueezeExcitation(input_channels=16, squeeze_channels=4, activation=s4tf.swish)
    assert se.fc1.filter.shape == (1, 1, 16, 4) and se.fc2.filter.shape == (1, 1, 4, 16)
    assert se.activation is s4tf.swish and se.gate is s4tf.sigmoid
    assert s4tf.parameter_count(se) == 16 * 4 + 4 + 4 * 16 + 16
    assert layers.SqueezeExcitation.TangentVector._s4tf_field_names == ("fc1", "fc2")


def test_gradients(backend):
    s4tf.random.seed(0)
    se = _with_biases(layers.SqueezeExcitation(4, 2, activation=s4tf.swish, dtype=F64))
    x = s4tf.random.normal([2, 3, 3, 4], dtype=F64, seed=5)
    check_gradients(lambda m, t: m(t), se, x)


def test_errors():
    with pytest.raises(ValueError, match=r"expected an input of shape \(\?, \?, \?, 8\), got shape \(1, 4, 4, 6\)"):
        layers.SqueezeExcitation(8, 2)(s4tf.zeros([1, 4, 4, 6]))
    with pytest.raises(ValueError, match="squeeze_channels must be a positive int, got 0"):
        layers.SqueezeExcitation(8, 0)
