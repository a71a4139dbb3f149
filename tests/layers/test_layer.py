"""Layer base, Sequential, Function, sequenced, shape-check messages."""

import pytest

import s4tf
from s4tf import layers
from s4tf.testing import check_gradients


def test_sequential_equals_manual_composition_and_differentiates():
    s4tf.random.seed(0)
    a = layers.Dense(3, 4, activation=s4tf.tanh, dtype=s4tf.float64)
    b = layers.Dense(4, 2, dtype=s4tf.float64)
    model = layers.Sequential(a, layers.Function(lambda t: t * 2.0), b)
    x = s4tf.random.normal([5, 3], dtype=s4tf.float64, seed=1)
    expected = b(a(x) * 2.0)
    assert model(x).tolist() == expected.tolist()
    assert x.sequenced(a, lambda t: t * 2.0, b).tolist() == expected.tolist()
    check_gradients(lambda m, x: m(x), model, x)
    grad = s4tf.gradient(model, of=lambda m: m(x).sum())
    assert isinstance(grad.layers[0], layers.Dense.TangentVector)


def test_sequential_accepts_a_list_and_rejects_non_layers():
    assert len(layers.Sequential([layers.Flatten(), layers.Flatten()]).layers) == 2
    with pytest.raises(TypeError, match="item 1 is a int, not a layer"):
        layers.Sequential(layers.Flatten(), 3)


def test_layer_without_call_explains():
    class Empty(s4tf.Layer):
        pass

    with pytest.raises(TypeError, match="Empty does not define __call__"):
        Empty()(s4tf.ones([1]))


def test_user_layer_is_frozen_and_differentiable():
    class Affine(s4tf.Layer):
        w: s4tf.Tensor
        b: s4tf.Tensor

        def __call__(self, x):
            return x * self.w + self.b

    layer = Affine(s4tf.Tensor([2.0], dtype=s4tf.float64), s4tf.Tensor([1.0], dtype=s4tf.float64))
    with pytest.raises(Exception, match="immutable"):
        layer.w = s4tf.Tensor([0.0])
    check_gradients(lambda m, x: m(x), layer, s4tf.Tensor([3.0], dtype=s4tf.float64))


def test_shape_errors_name_layer_expected_and_received():
    with pytest.raises(ValueError, match=r"Dense: expected an input of shape \(\.\.\., 3\), got shape \(2, 5\)"):
        layers.Dense(3, 4)(s4tf.ones([2, 5]))
    with pytest.raises(ValueError, match=r"Conv2D: expected an input of shape \(\?, \?, \?, 1\), got shape \(2, 8, 8, 3\)"):
        layers.Conv2D(filter_shape=(3, 3, 1, 2))(s4tf.ones([2, 8, 8, 3]))
    with pytest.raises(ValueError, match=r"MaxPool2D: expected an input of shape \(\?, \?, \?, \?\), got shape \(8, 8\)"):
        layers.MaxPool2D(pool_size=2)(s4tf.ones([8, 8]))
    with pytest.raises(ValueError, match=r"BatchNorm: expected an input with 4 features on axis -1.*got shape \(2, 3\)"):
        layers.BatchNorm(feature_count=4)(s4tf.ones([2, 3]))
    with pytest.raises(ValueError, match=r"LSTMCell: expected an input of shape \(\?, 3\), got shape \(2, 4\)"):
        cell = layers.LSTMCell(input_size=3, hidden_size=2)
        cell(s4tf.ones([2, 4]), cell.zero_state(2))
