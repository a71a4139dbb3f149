"""Convolution layers: layouts, agreement with s4tf.nn, gradients in both modes."""

import numpy as np
import pytest

import s4tf
from s4tf import layers
from s4tf.testing import check_gradients

F64 = s4tf.float64


def _x(shape, seed=0):
    return s4tf.random.normal(shape, dtype=F64, seed=seed)


CASES = [
    (layers.Conv1D, dict(filter_shape=(3, 2, 3), padding="same"), (2, 5, 2)),
    (layers.Conv2D, dict(filter_shape=(3, 3, 2, 3), strides=2, activation=s4tf.tanh), (1, 5, 5, 2)),
    (layers.Conv2D, dict(filter_shape=(2, 2, 1, 2), dilations=2, padding="same"), (1, 4, 4, 1)),
    (layers.Conv3D, dict(filter_shape=(2, 2, 2, 1, 2)), (1, 3, 3, 3, 1)),
    (layers.TransposedConv1D, dict(filter_shape=(3, 2, 3), strides=2, padding="same"), (1, 3, 3)),
    (layers.TransposedConv2D, dict(filter_shape=(3, 3, 2, 3), strides=2), (1, 2, 2, 3)),
    (layers.TransposedConv3D, dict(filter_shape=(2, 2, 2, 1, 2), strides=2), (1, 2, 2, 2, 2)),
    (layers.DepthwiseConv2D, dict(filter_shape=(3, 3, 2, 2), padding="same"), (1, 4, 4, 2)),
    (layers.SeparableConv1D, dict(depthwise_filter_shape=(3, 2, 2), pointwise_filter_shape=(1, 4, 3)), (1, 6, 2)),
    (layers.SeparableConv2D, dict(depthwise_filter_shape=(3, 3, 2, 1), pointwise_filter_shape=(1, 1, 2, 3),
                                  padding="same"), (1, 4, 4, 2)),
]


@pytest.mark.parametrize("cls,kwargs,shape", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_gradients_wrt_layer_and_input(cls, kwargs, shape):
    s4tf.random.seed(0)
    layer = cls(dtype=F64, **kwargs)
    # A non-zero bias so its derivative is exercised through the activation too.
    layer = s4tf.replace(layer, bias=s4tf.random.normal(layer.bias.shape, dtype=F64, seed=5))
    check_gradients(lambda m, x: m(x), layer, _x(shape))


def test_conv2d_layout_defaults_and_values():
    conv = layers.Conv2D(filter_shape=(3, 3, 2, 4), padding="same", activation=s4tf.relu, dtype=F64)
    assert conv.filter.shape == (3, 3, 2, 4) and conv.bias.tolist() == [0.0] * 4
    assert (conv.strides, conv.padding, conv.dilations) == ((1, 1), "same", (1, 1))
    assert layers.Conv2D.TangentVector._s4tf_field_names == ("filter", "bias")
    conv = s4tf.replace(conv, bias=s4tf.Tensor([0.1, -0.2, 0.3, 0.0], dtype=F64))
    x = _x((2, 5, 5, 2))
    expected = s4tf.relu(s4tf.nn.conv2d(x, conv.filter, padding="same") + conv.bias)
    np.testing.assert_allclose(conv(x).numpy(), expected.numpy(), rtol=1e-12)
    assert layers.Conv2D(filter_shape=(3, 3, 2, 4), use_bias=False).bias is None


def test_transposed_and_depthwise_layouts():
    assert layers.TransposedConv2D(filter_shape=(3, 3, 5, 7)).bias.shape == (5,)
    assert layers.DepthwiseConv2D(filter_shape=(3, 3, 4, 2)).bias.shape == (8,)
    sep = layers.SeparableConv2D(depthwise_filter_shape=(3, 3, 4, 2), pointwise_filter_shape=(1, 1, 8, 6))
    assert sep.depthwise_filter.shape == (3, 3, 4, 2) and sep.pointwise_filter.shape == (1, 1, 8, 6)


def test_constructor_errors():
    with pytest.raises(ValueError, match=r"filter_shape must be 4 positive ints \(height, width"):
        layers.Conv2D(filter_shape=(3, 3, 1))
    with pytest.raises(ValueError, match="padding must be 'valid' or 'same', got 'full'"):
        layers.Conv1D(filter_shape=(3, 1, 1), padding="full")
    with pytest.raises(ValueError, match="pointwise_filter_shape must be"):
        layers.SeparableConv2D(depthwise_filter_shape=(3, 3, 4, 2), pointwise_filter_shape=(1, 1, 4, 6))


def test_separable_layers_are_nn_separable_conv2d_plus_bias():
    sep = layers.SeparableConv2D(depthwise_filter_shape=(3, 2, 2, 2), pointwise_filter_shape=(1, 1, 4, 3),
                                 strides=2, padding="same", activation=s4tf.tanh, dtype=F64)
    sep = s4tf.replace(sep, bias=_x((3,), seed=1))
    x = _x((2, 5, 6, 2), seed=2)
    want = s4tf.tanh(s4tf.nn.separable_conv2d(x, sep.depthwise_filter, sep.pointwise_filter,
                                              strides=2, padding="same") + sep.bias)
    np.testing.assert_allclose(sep(x).numpy(), want.numpy(), rtol=1e-12)
    # The 1-D layer is the 2-D one on images of height 1.
    sep1 = layers.SeparableConv1D(depthwise_filter_shape=(3, 2, 2), pointwise_filter_shape=(1, 4, 3),
                                  strides=2, padding="same", dtype=F64)
    x1 = _x((2, 7, 2), seed=3)
    want1 = s4tf.nn.separable_conv2d(x1.expand_dims(1), sep1.depthwise_filter.expand_dims(0),
                                     sep1.pointwise_filter.expand_dims(0), strides=(1, 2),
                                     padding="same")
    np.testing.assert_allclose(sep1(x1).numpy(), want1.squeeze(1).numpy(), rtol=1e-12)
