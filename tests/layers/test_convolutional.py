"""Convolution layers: layouts, agreement with s4tf.nn, gradients in both modes."""

import re

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
    with pytest.raises(ValueError, match=r'padding must be "same", "valid" .*; got \'full\''):
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


EXPLICIT = [  # every convolution layer with explicit (before, after) pairs
    (layers.Conv1D, dict(filter_shape=(3, 2, 3), padding=[(2, 0)]), (2, 5, 2), "conv1d"),
    (layers.Conv2D, dict(filter_shape=(3, 3, 2, 3), strides=2, padding=((1, 1), (1, 1))),
     (1, 6, 5, 2), "conv2d"),
    (layers.Conv3D, dict(filter_shape=(2, 2, 2, 1, 2), padding=((1, 0), (0, 1), (1, 1))),
     (1, 2, 3, 3, 1), "conv3d"),
    (layers.TransposedConv2D, dict(filter_shape=(3, 3, 2, 3), strides=2, padding=((1, 1), (1, 1))),
     (1, 3, 3, 3), "conv2d_transpose"),
    (layers.DepthwiseConv2D, dict(filter_shape=(3, 3, 2, 2), padding=((0, 2), (1, 1))),
     (1, 4, 4, 2), "depthwise_conv2d"),
]


@pytest.mark.parametrize("cls,kwargs,shape,function", EXPLICIT, ids=lambda v: getattr(v, "__name__", ""))
def test_explicit_padding_layers_store_pairs_and_differentiate(cls, kwargs, shape, function):
    s4tf.random.seed(0)
    layer = cls(dtype=F64, use_bias=False, **kwargs)
    pairs = tuple(tuple(p) for p in kwargs["padding"])
    assert layer.padding == pairs and isinstance(layer.padding[0], tuple)
    x = _x(shape)
    expected = getattr(s4tf.nn, function)(x, layer.filter, strides=layer.strides, padding=pairs)
    np.testing.assert_array_equal(layer(x).numpy(), expected.numpy())
    check_gradients(lambda m, x: m(x), layer, x)


def test_explicit_padding_of_separable_layers():
    sep = layers.SeparableConv1D(depthwise_filter_shape=(3, 2, 2), pointwise_filter_shape=(1, 4, 3),
                                 padding=((1, 1),), dtype=F64)
    x = _x((1, 6, 2))
    padded = layers.SeparableConv1D(depthwise_filter_shape=(3, 2, 2),
                                    pointwise_filter_shape=(1, 4, 3), dtype=F64)
    padded = s4tf.replace(padded, depthwise_filter=sep.depthwise_filter,
                          pointwise_filter=sep.pointwise_filter)
    np.testing.assert_allclose(sep(x).numpy(), padded(s4tf.nn.zero_padding1d(x, 1)).numpy(),
                               atol=1e-12)
    sep2 = layers.SeparableConv2D(depthwise_filter_shape=(3, 3, 2, 1),
                                  pointwise_filter_shape=(1, 1, 2, 3), padding=((1, 1), (0, 0)))
    assert sep2(s4tf.ones([1, 4, 4, 2])).shape == (1, 4, 2, 3)


def test_explicit_padding_round_trips_through_a_checkpoint_and_strings_still_load(tmp_path):
    model = layers.Sequential(
        layers.Conv2D(filter_shape=(3, 3, 1, 2), padding=((1, 1), (0, 2))),
        layers.Conv2D(filter_shape=(3, 3, 2, 2), padding="same"),
        layers.MaxPool2D(pool_size=3, strides=2, padding=((1, 1), (1, 1))))
    s4tf.save(model, tmp_path / "model.safetensors")
    loaded = s4tf.load(tmp_path / "model.safetensors")
    assert [layer.padding for layer in loaded.layers] == [((1, 1), (0, 2)), "same", ((1, 1), (1, 1))]
    x = s4tf.random.normal([1, 6, 6, 1], seed=1)
    np.testing.assert_array_equal(loaded(x).numpy(), model(x).numpy())


def test_explicit_padding_errors():
    with pytest.raises(ValueError, match=r"Conv2D: padding must be .* 2 \(before, after\) pairs"):
        layers.Conv2D(filter_shape=(3, 3, 1, 1), padding=((1, 1),))
    with pytest.raises(ValueError, match=r'Conv1D: padding must be "same", "valid" or 1 '
                                         r"\(before, after\) pairs .*; got 'full'"):
        layers.Conv1D(filter_shape=(3, 1, 1), padding="full")


def test_padding_at_call_time_overrides_the_layers_own_for_that_call():
    conv = layers.Conv2D(filter_shape=(3, 3, 2, 3), strides=2, dtype=F64)
    x = _x((1, 6, 6, 2))
    pairs = ((1, 1), (0, 2))
    want = s4tf.nn.conv2d(x, conv.filter, strides=2, padding=pairs) + conv.bias
    np.testing.assert_array_equal(conv(x, padding=pairs).numpy(), want.numpy())
    assert conv.padding == "valid" and conv(x).shape == (1, 2, 2, 3)
    depthwise = layers.DepthwiseConv2D(filter_shape=(3, 3, 2, 1), strides=2, use_bias=False)
    zero_padded = s4tf.nn.zero_padding2d(x.astype(s4tf.float32), ((0, 1), (0, 1)))
    np.testing.assert_array_equal(depthwise(x, padding=((0, 1), (0, 1))).numpy(),
                                  depthwise(zero_padded).numpy())
    check_gradients(lambda m, x: m(x, padding=pairs), conv, x)


# Issue 19, item 4: one padding check for layers and ops, in any case.
@pytest.mark.parametrize("cls,kwargs,shape", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_upper_case_padding_is_the_lower_case_one(cls, kwargs, shape):
    x = _x(shape)
    for upper, lower in (("SAME", "same"), ("VALID", "valid")):
        kwargs = {**kwargs, "padding": lower}
        s4tf.random.seed(0)
        want = cls(dtype=F64, **kwargs)
        s4tf.random.seed(0)
        layer = cls(dtype=F64, **{**kwargs, "padding": upper})
        assert layer.padding == lower
        np.testing.assert_array_equal(layer(x).numpy(), want(x).numpy())
        np.testing.assert_array_equal(want(x, padding=upper).numpy(), want(x).numpy())


@pytest.mark.parametrize("cls,kwargs,shape", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_a_bad_padding_names_the_layer_what_it_got_and_what_it_takes(cls, kwargs, shape):
    name, n = cls.__name__, len(shape) - 2
    accepted = (rf'padding must be "same", "valid" or {n} \(before, after\) pairs of '
                rf"non-negative ints, one per spatial axis, .*; got {{got}}\. Case does not matter")
    for bad in ("full", ((1, 1),) * (n + 1), ((1, -1),) * n):
        message = f"{name}: " + accepted.format(got=re.escape(repr(bad)))
        with pytest.raises(ValueError, match=message):
            cls(**{**kwargs, "padding": bad})
        layer = cls(**kwargs)
        with pytest.raises(ValueError, match=message):
            layer(s4tf.ones(shape), padding=bad)


@pytest.mark.parametrize("op,args", [
    ("conv2d", ([1, 4, 4, 2], [3, 3, 2, 3])),
    ("conv2d_transpose", ([1, 4, 4, 3], [3, 3, 2, 3])),
    ("depthwise_conv2d", ([1, 4, 4, 2], [3, 3, 2, 1])),
    ("separable_conv2d", ([1, 4, 4, 2], [3, 3, 2, 1], [1, 1, 2, 3])),
])
def test_the_ops_take_any_case_and_give_the_same_error(op, args):
    fn = getattr(s4tf.nn, op)
    tensors = [s4tf.random.normal(shape, seed=i) for i, shape in enumerate(args)]
    np.testing.assert_array_equal(fn(*tensors, padding="SAME").numpy(),
                                  fn(*tensors, padding="same").numpy())
    with pytest.raises(ValueError, match=rf'^{op}: padding must be "same", "valid" or 2 '
                                         r"\(before, after\) pairs .*; got 'full'\. Case does not"):
        fn(*tensors, padding="full")


@pytest.mark.parametrize("rank", [1, 2])
def test_separable_layers_take_a_padding_for_one_call(rank):
    depthwise = (3,) * rank + (2, 2)
    pointwise = (1,) * rank + (4, 3)
    s4tf.random.seed(0)
    valid = getattr(layers, f"SeparableConv{rank}D")(depthwise, pointwise, dtype=F64)
    s4tf.random.seed(0)
    same = getattr(layers, f"SeparableConv{rank}D")(depthwise, pointwise, padding="same", dtype=F64)
    x = _x((1,) + (5,) * rank + (2,))
    np.testing.assert_array_equal(valid(x, padding="same").numpy(), same(x).numpy())
    pairs = ((1, 1),) * rank
    np.testing.assert_allclose(
        valid(x, padding=pairs).numpy(),
        valid(getattr(s4tf.nn, f"zero_padding{rank}d")(x, pairs)).numpy(), atol=1e-12)
    assert valid.padding == "valid" and valid(x).shape == (1,) + (3,) * rank + (3,)
    check_gradients(lambda m, x: m(x, padding="same"), valid, x)
