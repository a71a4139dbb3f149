"""Dense: layout, defaults, values, ranks, gradients."""

import numpy as np

import s4tf
from s4tf import layers
from s4tf.testing import check_gradients


def test_layout_and_defaults():
    dense = layers.Dense(4, 3)
    assert dense.weight.shape == (4, 3) and dense.bias.shape == (3,)
    assert dense.bias.tolist() == [0.0, 0.0, 0.0]
    assert dense.activation is s4tf.identity
    assert np.abs(dense.weight.numpy()).max() <= (6 / 7) ** 0.5
    assert layers.Dense(4, 3, use_bias=False).bias is None
    assert layers.Dense.TangentVector._s4tf_field_names == ("weight", "bias")


def test_values_against_numpy_for_every_rank():
    dense = layers.Dense(3, 2, activation=s4tf.relu, dtype=s4tf.float64)
    dense = s4tf.replace(dense, bias=s4tf.Tensor([0.5, -0.5], dtype=s4tf.float64))
    w, b = dense.weight.numpy(), dense.bias.numpy()
    for shape in [(3,), (4, 3), (2, 5, 3)]:
        x = np.random.default_rng(0).normal(size=shape)
        np.testing.assert_allclose(dense(s4tf.Tensor(x)).numpy(), np.maximum(x @ w + b, 0), rtol=1e-12)


def test_gradients_wrt_layer_and_input():
    s4tf.random.seed(3)
    dense = layers.Dense(3, 2, activation=s4tf.tanh, dtype=s4tf.float64)
    check_gradients(lambda m, x: m(x), dense, s4tf.random.normal([4, 3], dtype=s4tf.float64, seed=0))
    check_gradients(lambda m, x: m(x), dense, s4tf.random.normal([2, 4, 3], dtype=s4tf.float64, seed=1))
