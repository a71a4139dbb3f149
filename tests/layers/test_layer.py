"""Layer base, Sequential, Function, sequenced, shape-check messages."""

import numpy as np
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


# Issue 10, item 6: every layer constructor that takes sizes checks them at construction
# (one shared validator), naming the argument. name -> (good keyword arguments, how each
# size argument is given: "scalar", "tuple" (a filter shape), "per_axis" or "shape").
SIZED_LAYERS = {
    "Dense": (dict(input_size=3, output_size=2), {"input_size": "scalar", "output_size": "scalar"}),
    "Embedding": (dict(vocabulary_size=5, embedding_size=2),
                  {"vocabulary_size": "scalar", "embedding_size": "scalar"}),
    "BatchNorm": (dict(feature_count=3), {"feature_count": "scalar"}),
    "LayerNorm": (dict(feature_count=3), {"feature_count": "scalar"}),
    "InstanceNorm": (dict(feature_count=3), {"feature_count": "scalar"}),
    "GroupNorm": (dict(feature_count=4, group_count=2),
                  {"feature_count": "scalar", "group_count": "scalar"}),
    "SimpleRNNCell": (dict(input_size=3, hidden_size=2), {"input_size": "scalar", "hidden_size": "scalar"}),
    "LSTMCell": (dict(input_size=3, hidden_size=2), {"input_size": "scalar", "hidden_size": "scalar"}),
    "GRUCell": (dict(input_size=3, hidden_size=2), {"input_size": "scalar", "hidden_size": "scalar"}),
    "LSTM": (dict(input_size=3, hidden_size=2), {"input_size": "scalar", "hidden_size": "scalar"}),
    "GRU": (dict(input_size=3, hidden_size=2), {"input_size": "scalar", "hidden_size": "scalar"}),
    "MultiHeadAttention": (dict(query_size=4, head_count=2, head_size=2, key_size=4, value_size=4,
                                output_size=4),
                           dict.fromkeys(("query_size", "head_count", "head_size", "key_size",
                                          "value_size", "output_size"), "scalar")),
    **{f"Conv{n}D": (dict(filter_shape=(2,) * n + (1, 2)),
                     {"filter_shape": "tuple", "strides": "per_axis", "dilations": "per_axis"})
       for n in (1, 2, 3)},
    **{f"TransposedConv{n}D": (dict(filter_shape=(2,) * n + (1, 2)),
                               {"filter_shape": "tuple", "strides": "per_axis", "dilations": "per_axis"})
       for n in (1, 2, 3)},
    "DepthwiseConv2D": (dict(filter_shape=(2, 2, 1, 2)),
                        {"filter_shape": "tuple", "strides": "per_axis", "dilations": "per_axis"}),
    **{f"SeparableConv{n}D": (dict(depthwise_filter_shape=(2,) * n + (1, 2),
                                   pointwise_filter_shape=(1,) * n + (2, 3)),
                              {"depthwise_filter_shape": "tuple", "pointwise_filter_shape": "tuple",
                               "strides": "per_axis"})
       for n in (1, 2)},
    **{f"{kind}Pool{n}D": (dict(pool_size=2), {"pool_size": "per_axis", "strides": "per_axis"})
       for kind in ("Max", "Avg") for n in (1, 2, 3)},
    **{f"UpSampling{n}D": (dict(size=2), {"size": "per_axis"}) for n in (1, 2, 3)},
    **{f"ZeroPadding{n}D": (dict(padding=1), {"padding": "padding"}) for n in (1, 2, 3)},
    "Reshape": (dict(shape=(-1, 4)), {"shape": "shape"}),
    "AdaptiveAvgPool2D": (dict(output_size=2), {"output_size": "per_axis"}),
    "ChannelShuffle": (dict(groups=2), {"groups": "scalar"}),
    "SqueezeExcitation": (dict(input_channels=4, squeeze_channels=2),
                          {"input_channels": "scalar", "squeeze_channels": "scalar"}),
    "Conv2DNormActivation": (dict(input_channels=2, output_channels=3),
                             {"input_channels": "scalar", "output_channels": "scalar",
                              "kernel_size": "scalar", "strides": "scalar"}),
}
WITHOUT_SIZES = {
    "AlphaDropout", "Bidirectional", "Dropout", "Flatten", "Function", "GaussianDropout",
    "GaussianNoise", "Layer", "RNN", "Sequential", "Shared", "StochasticDepth",
    *(f"Global{kind}Pool{n}D" for kind in ("Avg", "Max") for n in (1, 2, 3)),
}
BAD_SIZE_VALUES = {"fractional": 2.5, "zero": 0, "negative": -2, "bool": True, "string": "3"}


def test_the_size_table_covers_every_layer():
    assert set(SIZED_LAYERS) | WITHOUT_SIZES == set(layers.__all__)


def _with_bad(kind, good, bad):
    if kind == "tuple":
        return tuple(good[:-1]) + (bad,)
    if kind == "shape":
        return (-1, bad)
    return bad


@pytest.mark.parametrize("bad", sorted(BAD_SIZE_VALUES))
@pytest.mark.parametrize("name", sorted(SIZED_LAYERS))
def test_layer_constructors_reject_bad_sizes_naming_the_argument(name, bad):
    good, arguments = SIZED_LAYERS[name]
    layer_type = getattr(layers, name)
    layer_type(**good)  # the good arguments build the layer
    value = BAD_SIZE_VALUES[bad]
    for argument, kind in arguments.items():
        if kind == "padding" and bad == "zero":
            continue  # no padding is a valid padding
        given = _with_bad(kind, good.get(argument, (2, 2, 1, 2)), value)
        with pytest.raises(ValueError, match=rf"{argument}(\[\d\])? must be"):
            layer_type(**{**good, argument: given})


# Issue 10, item 7: layers compute in their own dtype (cast once, in the Layer base).
def _dtype_cases():
    return {
        "Dense": (lambda dt: layers.Dense(3, 2, dtype=dt), (2, 3)),
        "Conv2D": (lambda dt: layers.Conv2D(filter_shape=(2, 2, 3, 2), dtype=dt), (1, 4, 4, 3)),
        "DepthwiseConv2D": (lambda dt: layers.DepthwiseConv2D(filter_shape=(2, 2, 3, 2), dtype=dt),
                            (1, 4, 4, 3)),
        "SeparableConv2D": (lambda dt: layers.SeparableConv2D(
            depthwise_filter_shape=(2, 2, 3, 2), pointwise_filter_shape=(1, 1, 6, 2), dtype=dt),
            (1, 4, 4, 3)),
        "TransposedConv2D": (lambda dt: layers.TransposedConv2D(filter_shape=(2, 2, 2, 3), dtype=dt),
                             (1, 3, 3, 3)),
        "BatchNorm": (lambda dt: layers.BatchNorm(feature_count=3, dtype=dt), (2, 3)),
        "LayerNorm": (lambda dt: layers.LayerNorm(feature_count=3, dtype=dt), (2, 3)),
        "GroupNorm": (lambda dt: layers.GroupNorm(feature_count=4, group_count=2, dtype=dt), (2, 4)),
        "LSTMCell": (lambda dt: layers.LSTMCell(input_size=3, hidden_size=2, dtype=dt), "cell"),
        "GRUCell": (lambda dt: layers.GRUCell(input_size=3, hidden_size=2, dtype=dt), "cell"),
        "MultiHeadAttention": (lambda dt: layers.MultiHeadAttention(query_size=4, head_count=2, dtype=dt),
                               (1, 3, 4)),
    }


def _output(layer, shape, x):
    if shape == "cell":
        out = layer(x, layer.zero_state(x.shape[0]))
        return out[0] if isinstance(out, tuple) else getattr(out, "hidden", out)
    return layer(x)


def _input(shape, dtype):
    shape = (2, 3) if shape == "cell" else shape
    return s4tf.random.uniform(list(shape), seed=0, dtype=s4tf.float64).astype(dtype)


@pytest.mark.parametrize("name", sorted(_dtype_cases()))
def test_layers_compute_in_their_own_dtype(backend, name):
    make, shape = _dtype_cases()[name]
    s4tf.random.seed(0)
    f32, bf16 = make(s4tf.float32), make(s4tf.bfloat16)
    for layer, x_dtype, expected in ((f32, s4tf.float64, s4tf.float32),
                                     (bf16, s4tf.bfloat16, s4tf.bfloat16),
                                     (bf16, s4tf.float32, s4tf.bfloat16)):
        out = _output(layer, shape, _input(shape, x_dtype))
        out = out.hidden if hasattr(out, "hidden") else out
        assert out.dtype == expected, (name, x_dtype, out.dtype)


def test_gradients_reach_a_wider_input_in_its_own_dtype(backend):
    s4tf.random.seed(0)
    dense = layers.Dense(3, 2)
    x = s4tf.random.uniform([4, 3], seed=1, dtype=s4tf.float64)
    assert dense(x).dtype == s4tf.float32
    grad_model, grad_x = s4tf.gradient(dense, x, of=lambda m, x: (m(x) ** 2).sum())
    assert grad_x.dtype == s4tf.float64 and grad_model.weight.dtype == s4tf.float32
    # The same numbers as feeding the layer a float32 input.
    expected = s4tf.gradient(x.astype(s4tf.float32), of=lambda x: (dense(x) ** 2).sum())
    np.testing.assert_allclose(grad_x.numpy(), expected.numpy(), rtol=1e-6)
    # Layers without parameters of their own pass their input's dtype through.
    assert layers.Flatten()(x).dtype == s4tf.float64
    assert layers.Sequential(layers.Flatten(), dense)(x).dtype == s4tf.float32


def test_bfloat16_layers_differentiate_in_bfloat16(backend):
    conv = layers.Conv2D(filter_shape=(2, 2, 3, 2), dtype=s4tf.bfloat16)
    x = s4tf.ones([1, 3, 3, 3])
    grad_model, grad_x = s4tf.gradient(conv, x, of=lambda m, x: m(x).sum())
    assert (grad_model.filter.dtype, grad_model.bias.dtype) == (s4tf.bfloat16, s4tf.bfloat16)
    assert grad_x.dtype == s4tf.float32


def test_a_differentiated_python_float_input_stays_weakly_typed():
    class Scale(s4tf.Layer):
        factor: s4tf.Tensor

        def __call__(self, x):
            return x * self.factor

    layer = Scale(s4tf.Tensor([2.0]))
    assert s4tf.gradient(3.0, of=lambda x: layer(x).sum()) == 2.0
    assert s4tf.derivative(3.0, of=lambda x: layer(x).sum()).tolist() == 2.0
