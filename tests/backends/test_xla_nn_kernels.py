"""The xla backend's convolution kernels (``backends/xla/nn_kernels.py``) against XLA's convolution.

Pointwise convolutions (window 1, unpadded, one group) run as ``dot_general``;
every other convolution stays one ``conv_general_dilated``. Each case on
either side of that boundary is checked against the reference lowering (the
convolution, its transposes by ``jax.linear_transpose``) in float64 and
float32, and against the op it must lower to.
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from jax import lax  # noqa: E402

from s4tf.backends.xla import nn_kernels  # noqa: E402
from s4tf.backends.xla.kernels import JAX_KERNELS  # noqa: E402

# (input shape without channels, filter window, strides, padding, dilations, groups, path)
CASES = {
    "pointwise_2d": ((2, 5, 7), (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, "dot"),
    "pointwise_2d_stride_2": ((2, 5, 7), (1, 1), (2, 2), ((0, 0), (0, 0)), (1, 1), 1, "dot"),
    "pointwise_2d_strides_2_3": ((2, 6, 7), (1, 1), (2, 3), ((0, 0), (0, 0)), (1, 1), 1, "dot"),
    "pointwise_stride_past_the_input": ((1, 2, 2), (1, 1), (3, 3), ((0, 0), (0, 0)), (1, 1), 1,
                                        "dot"),
    "pointwise_dilated": ((2, 4, 4), (1, 1), (1, 1), ((0, 0), (0, 0)), (2, 2), 1, "dot"),
    "pointwise_1d_stride_2": ((3, 9), (1,), (2,), ((0, 0),), (1,), 1, "dot"),
    "pointwise_3d": ((1, 4, 5, 7), (1, 1, 1), (1, 2, 3), ((0, 0),) * 3, (1, 1, 1), 1, "dot"),
    "padded_pointwise": ((2, 5, 5), (1, 1), (1, 1), ((1, 0), (0, 1)), (1, 1), 1, "convolution"),
    "grouped_pointwise": ((2, 5, 5), (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 2, "convolution"),
    "3x3": ((2, 6, 6), (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, "convolution"),
    "3x1_stride_2": ((2, 7, 6), (3, 1), (2, 2), ((1, 1), (0, 0)), (1, 1), 1, "convolution"),
}
TOLERANCE = {np.float64: 1e-12, np.float32: 1e-5}


def _reference(x, w, strides, padding, dilations, groups):
    return lax.conv_general_dilated(
        x, w, window_strides=strides, padding=padding, rhs_dilation=dilations,
        dimension_numbers=nn_kernels._dimension_numbers(x.ndim), feature_group_count=groups,
        precision=lax.Precision.HIGHEST)


def _lowered_ops(function, *args) -> str:
    return jax.jit(function).lower(*args).as_text()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", CASES)
def test_convolution_kernels_match_xla_convolution_and_take_their_path(name, dtype):
    spatial_input, window, strides, padding, dilations, groups, path = CASES[name]
    rng = np.random.default_rng(0)
    cin, cout = 4, 6
    x = rng.normal(size=(*spatial_input, cin)).astype(dtype)
    w = rng.normal(size=(*window, cin // groups, cout)).astype(dtype)
    options = {"strides": strides, "padding": padding, "dilations": dilations, "groups": groups}
    expected_y = _reference(x, w, strides, padding, dilations, groups)
    g = rng.normal(size=expected_y.shape).astype(dtype)
    expected = {
        "conv": expected_y,
        "conv_backprop_input": jax.linear_transpose(
            lambda x: _reference(x, w, strides, padding, dilations, groups), x)(g)[0],
        "conv_backprop_filter": jax.linear_transpose(
            lambda w: _reference(x, w, strides, padding, dilations, groups), w)(g)[0],
    }
    kernels = {
        "conv": (lambda x, w: JAX_KERNELS.conv(x, w, **options), (x, w)),
        "conv_backprop_input": (lambda g, w: JAX_KERNELS.conv_backprop_input(
            g, w, input_shape=x.shape, **options), (g, w)),
        "conv_backprop_filter": (lambda x, g: JAX_KERNELS.conv_backprop_filter(
            x, g, filter_shape=w.shape, **options), (x, g)),
    }
    for kernel, (function, args) in kernels.items():
        got = np.asarray(function(*args))
        want = np.asarray(expected[kernel])
        assert got.shape == want.shape and got.dtype == want.dtype, (kernel, got.shape, want.shape)
        scale = max(float(np.max(np.abs(want))), 1.0)
        error = float(np.max(np.abs(got - want))) / scale
        assert error < TOLERANCE[dtype], f"{name} {kernel}: relative error {error:.2e}"
        ops = _lowered_ops(function, *args)
        uses_convolution = "stablehlo.convolution" in ops
        assert uses_convolution == (path == "convolution"), f"{name} {kernel} lowers to:\n{ops}"
        if path == "dot":
            assert "stablehlo.dot_general" in ops
