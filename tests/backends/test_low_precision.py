"""The op suite and every layer in float16 and bfloat16 on every backend, forward and gradient.

Each case runs on inputs rounded to the low dtype and is compared with the same
function in float32 on the same (rounded) inputs, with a tolerance per dtype:
float16 keeps 11 significant bits, bfloat16 8.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_op_suite import CASES  # the representative op suite

import s4tf
from s4tf import layers

pytestmark = pytest.mark.filterwarnings("ignore::s4tf.xla.RecompilationWarning")

LOW = ["float16", "bfloat16"]
# Relative to the largest value of the float32 result: errors of a few ulps of the
# low dtype, accumulated over the sums inside matmuls, convolutions and norms.
TOLERANCE = {"float16": 1e-2, "bfloat16": 6e-2}


def _low(arrays, dtype):
    return [s4tf.Tensor(np.asarray(a, np.float32)).astype(dtype) for a in arrays]


def _close(got, expected, dtype, what):
    got = np.asarray(got.numpy(), np.float32)
    expected = np.asarray(expected.numpy(), np.float32)
    assert got.shape == expected.shape, what
    assert np.isfinite(got).all(), f"{what}: non-finite values in {dtype}"
    scale = max(float(np.abs(expected).max()), 1.0)
    np.testing.assert_allclose(got, expected, rtol=0, atol=TOLERANCE[dtype] * scale, err_msg=what)


def _loss(fn):
    return lambda *xs: (fn(*xs) * fn(*xs)).mean()


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("case", sorted(CASES))
def test_ops_in_low_precision_match_float32(backend, dtype, case):
    fn, arrays, _ = CASES[case]
    low = _low(arrays, dtype)
    reference = [t.astype(s4tf.float32) for t in low]
    out = fn(*low)
    assert out.dtype == dtype, (case, out.dtype)
    _close(out, fn(*reference), dtype, f"{case} value")
    grads = s4tf.gradient(*low, of=_loss(fn))
    expected = s4tf.gradient(*reference, of=_loss(fn))
    if len(arrays) == 1:
        grads, expected = (grads,), (expected,)
    for i, (g, e) in enumerate(zip(grads, expected, strict=True)):
        assert g.dtype == dtype, (case, i, g.dtype)
        _close(g, e, dtype, f"{case} gradient {i}")


def _layers():
    """Every layer kind, each with an input; built fresh per test (they are float32)."""
    s4tf.random.seed(0)
    return {
        "Dense": (layers.Dense(6, 4, activation=s4tf.relu), (3, 6)),
        "Conv2D": (layers.Conv2D(filter_shape=(3, 3, 3, 4), padding="same"), (2, 6, 6, 3)),
        "DepthwiseConv2D": (layers.DepthwiseConv2D(filter_shape=(3, 3, 3, 2), padding="same"),
                            (2, 6, 6, 3)),
        "MaxPool2D": (layers.MaxPool2D(pool_size=(2, 2), strides=(2, 2)), (2, 6, 6, 3)),
        "AvgPool2D": (layers.AvgPool2D(pool_size=(2, 2), strides=(2, 2)), (2, 6, 6, 3)),
        "GlobalAvgPool2D": (layers.GlobalAvgPool2D(), (2, 6, 6, 3)),
        "BatchNorm": (layers.BatchNorm(feature_count=3), (4, 5, 5, 3)),
        "LayerNorm": (layers.LayerNorm(feature_count=6), (3, 6)),
        "Embedding": (layers.Embedding(vocabulary_size=5, embedding_size=4), None),
    }


LAYER_NAMES = sorted(_layers())


def _run(layer, x):
    with s4tf.training():
        out = layer(x)
    return out[0] if isinstance(out, tuple | list) else out


def _layer_input(shape, dtype):
    if shape is None:
        return s4tf.Tensor(np.array([[0, 3, 4], [1, 1, 2]], np.int32))
    return s4tf.Tensor(np.random.default_rng(1).normal(size=shape).astype(np.float32)).astype(dtype)


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("name", LAYER_NAMES)
def test_layers_under_mixed_policy(backend, dtype, name):
    """Under ``mixed_<dtype>`` layers compute in the low dtype; gradients are float32."""
    layer, shape = _layers()[name]
    x = _layer_input(shape, "float32")
    expected = _run(layer, x)
    with s4tf.precision.policy(f"mixed_{dtype}"):
        out = _run(layer, x)
        if name.endswith("Pool2D"):
            assert out.dtype == "float32"  # no parameters: computes in its input's dtype
            return
        assert out.dtype == dtype, (name, out.dtype)
        grads = s4tf.gradient(layer, of=lambda m: (_run(m, x).astype(s4tf.float32) ** 2).mean())
    _close(out, expected, dtype, f"{name} value")
    reference = s4tf.gradient(layer, of=lambda m: (_run(m, x) ** 2).mean())
    for (path, g), (_, e) in zip(_leaves(grads), _leaves(reference), strict=True):
        assert g.dtype == "float32", (name, path, g.dtype)
        _close(g, e, dtype, f"{name} gradient {path}")


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("name", LAYER_NAMES)
def test_layers_built_in_low_precision(backend, dtype, name):
    """A layer whose parameters are float16 or bfloat16 computes in them, forward and gradient."""
    layer, shape = _layers()[name]
    low = s4tf.tree.tree_map(
        lambda t: t.astype(dtype) if isinstance(t, s4tf.Tensor) and t.dtype == "float32" else t, layer)
    x = _layer_input(shape, dtype)
    out = _run(low, x)
    assert out.dtype == dtype, (name, out.dtype)
    reference_layer = s4tf.tree.tree_map(
        lambda t: t.astype(s4tf.float32) if isinstance(t, s4tf.Tensor) and t.dtype.is_floating else t, low)
    _close(out, _run(reference_layer, x.astype(s4tf.float32) if shape else x), dtype, name)
    if not _leaves(low):
        return  # a pool: its input's gradient is the op suite's
    grads = s4tf.gradient(low, of=lambda m: (_run(m, x).astype(s4tf.float32) ** 2).mean())
    for path, g in _leaves(grads):
        assert g.dtype == dtype, (name, path, g.dtype)
        assert np.isfinite(np.asarray(g.numpy(), np.float32)).all(), (name, path)


def _leaves(value):
    leaves, _ = s4tf.tree.tree_flatten(value)
    return [(i, t) for i, t in enumerate(leaves) if isinstance(t, s4tf.Tensor)]




@pytest.mark.parametrize("dtype", LOW)
def test_statistics_of_many_values_do_not_overflow(backend, dtype):
    """2**17 ones sum past float16's largest number (65,504): sums accumulate in float32."""
    x = s4tf.ones([2**17, 2]).astype(dtype)
    y, mean, variance = s4tf.nn.batch_norm(x, s4tf.ones([2]).astype(dtype),
                                           s4tf.zeros([2]).astype(dtype), epsilon=1e-3)
    assert mean.dtype == dtype
    np.testing.assert_array_equal(np.asarray(mean.numpy(), np.float32), [1.0, 1.0])
    np.testing.assert_array_equal(np.asarray(variance.numpy(), np.float32), [0.0, 0.0])
