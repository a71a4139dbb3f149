"""separable_conv2d: values against an explicit loop, derivatives, errors, every backend."""

from __future__ import annotations

import math

import numpy as np
import pytest

import s4tf
from s4tf.testing import check_gradients

RNG = np.random.default_rng(7)


def _f64(*shape):
    return RNG.standard_normal(shape)


def _same_pads(size, k, s, d):
    """TensorFlow's "same" rule written out: the odd padding element goes after."""
    total = max((math.ceil(size / s) - 1) * s + (k - 1) * d + 1 - size, 0)
    return total // 2, total - total // 2


def ref_separable(x, depthwise, pointwise, strides, padding, dilations):
    """Explicit loops over TF's definition:

    out[b, i, j, o] = sum_{di, dj, c, m} x[b, s0*i + d0*di, s1*j + d1*dj, c]
                      * depthwise[di, dj, c, m] * pointwise[0, 0, c*M + m, o]
    """
    kh, kw, channels, multiplier = depthwise.shape
    pads = [(0, 0), (0, 0)] if padding == "valid" else [
        _same_pads(x.shape[1 + a], (kh, kw)[a], strides[a], dilations[a]) for a in range(2)]
    xp = np.pad(x, [(0, 0), pads[0], pads[1], (0, 0)])
    out_h = (xp.shape[1] - (kh - 1) * dilations[0] - 1) // strides[0] + 1
    out_w = (xp.shape[2] - (kw - 1) * dilations[1] - 1) // strides[1] + 1
    out = np.zeros((x.shape[0], out_h, out_w, pointwise.shape[-1]))
    for b, i, j in np.ndindex(x.shape[0], out_h, out_w):
        for di, dj, c, m in np.ndindex(kh, kw, channels, multiplier):
            pixel = xp[b, strides[0] * i + dilations[0] * di, strides[1] * j + dilations[1] * dj, c]
            out[b, i, j] += pixel * depthwise[di, dj, c, m] * pointwise[0, 0, c * multiplier + m]
    return out


CASES = [((1, 1), "valid", (1, 1)), ((2, 2), "same", (1, 1)), ((1, 2), "same", (1, 1)),
         ((1, 1), "same", (2, 1)), ((2, 1), "valid", (1, 2))]


@pytest.mark.filterwarnings("ignore::s4tf.xla.RecompilationWarning")
@pytest.mark.parametrize("strides, padding, dilations", CASES)
def test_matches_explicit_loop_on_every_backend(backend, strides, padding, dilations):
    x, depthwise, pointwise = _f64(2, 7, 6, 3), _f64(3, 2, 3, 2), _f64(1, 1, 6, 4)
    got = s4tf.nn.separable_conv2d(s4tf.Tensor(x), s4tf.Tensor(depthwise),
                                   s4tf.Tensor(pointwise), strides=strides, padding=padding,
                                   dilations=dilations)
    assert got.backend == backend
    want = ref_separable(x, depthwise, pointwise, strides, padding, dilations)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-10)


def test_known_value_of_all_ones():
    # 3 channels x 2 multipliers, each a full 3x3 window of ones, summed by the 1x1 step.
    y = s4tf.nn.separable_conv2d(s4tf.ones([1, 5, 5, 3]), s4tf.ones([3, 3, 3, 2]),
                                 s4tf.ones([1, 1, 6, 4]), padding="same")
    assert y.shape == (1, 5, 5, 4)
    assert y[0, 2, 2].tolist() == [54.0] * 4
    assert y[0, 0, 0].tolist() == [24.0] * 4  # a corner sees a 2x2 window


@pytest.mark.filterwarnings("ignore::s4tf.xla.RecompilationWarning")
def test_finite_difference_gradients_on_every_backend(backend):
    def f(x, depthwise, pointwise):
        return s4tf.nn.separable_conv2d(x, depthwise, pointwise, strides=2, padding="same")

    points = [s4tf.Tensor(_f64(*shape)) for shape in ((1, 4, 5, 2), (2, 2, 2, 2), (1, 1, 4, 3))]
    check_gradients(f, *points, order=2 if backend == "naive" else 1)


def test_gradients_with_dilation():
    def f(x, depthwise, pointwise):
        return s4tf.nn.separable_conv2d(x, depthwise, pointwise, dilations=(2, 1))

    points = [s4tf.Tensor(_f64(*shape)) for shape in ((2, 5, 4, 2), (2, 2, 2, 1), (1, 1, 2, 2))]
    check_gradients(f, *points)


@pytest.mark.parametrize("depthwise, pointwise, words", [
    ((3, 3, 4, 2), (1, 1, 8, 5), ["separable_conv2d", "(1, 6, 6, 3)", "(3, 3, 4, 2)"]),
    ((3, 3, 3, 2), (1, 1, 5, 5), ["separable_conv2d", "(1, 1, 5, 5)", "(1, 1, 6, out_channels)"]),
    ((3, 3, 3, 2), (3, 3, 6, 5), ["separable_conv2d", "(3, 3, 6, 5)"]),
    ((3, 3, 3), (1, 1, 6, 5), ["separable_conv2d", "rank 4", "(3, 3, 3)"]),
])
def test_mismatched_shapes_name_the_op_and_every_shape(depthwise, pointwise, words):
    with pytest.raises(ValueError) as info:
        s4tf.nn.separable_conv2d(s4tf.ones([1, 6, 6, 3]), s4tf.ones(list(depthwise)),
                                 s4tf.ones(list(pointwise)))
    for word in words:
        assert word in str(info.value)
