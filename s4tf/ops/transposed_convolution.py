"""Transposed convolutions: the gradient of ``conv{1,2,3}d`` with respect to its input, as an op.

A transposed convolution *is* the ``conv_backprop_input`` primitive of
``convolution.py`` (as TF's ``conv2d_transpose``), so its derivatives are
convolutions again; this module works out its output shape (given, or TF and
Keras's rule) and checks that the forward convolution of that output gives
back the input's shape.
"""

from __future__ import annotations

from .convolution import FILTER_LAYOUTS, check_filter, conv_backprop_input_
from .window_geometry import (
    check_input,
    expand,
    explicit_padding,
    output_size,
    padding_pairs,
    transposed_size,
)

__all__ = ["conv1d_transpose", "conv2d_transpose", "conv3d_transpose"]


def _transposed(x, w, n, output_shape, strides, padding, dilations, op):
    x_shape = check_input(x, n, op)
    w_shape = check_filter(w, n, op, FILTER_LAYOUTS[n].replace("in, out", "out, in"))
    strides = expand(strides, n, "strides", op)
    dilations = expand(dilations, n, "dilations", op)
    if w_shape[-1] != x_shape[-1]:
        raise ValueError(
            f"{op}: the input has {x_shape[-1]} channels (shape {x_shape}) but the filter of "
            f"shape {w_shape} expects {w_shape[-1]}; a transposed convolution's filter is "
            "(..., out_channels, in_channels). Fix the filter shape or the input."
        )
    window = w_shape[:-2]
    padding = padding_pairs(padding, n, op)
    if output_shape is None:
        per_axis = (padding,) * n if isinstance(padding, str) else padding
        spatial = tuple(transposed_size(size, k, s, d, p) for size, k, s, d, p in
                        zip(x_shape[1:-1], window, strides, dilations, per_axis, strict=True))
        if min(spatial) < 1:
            raise ValueError(
                f"{op}: the forward convolution's padding {padding} is more than its window "
                f"{window} covers: the output would have spatial shape {spatial}. Pass less "
                "padding, or an output_shape."
            )
    else:
        given = tuple(int(v) for v in output_shape)
        if len(given) == n + 2:
            if given[0] != x_shape[0] or given[-1] != w_shape[-2]:
                raise ValueError(
                    f"{op}: output_shape {given} must have the input's batch size {x_shape[0]} "
                    f"and the filter's output channels {w_shape[-2]} (filter shape {w_shape})."
                )
            given = given[1:-1]
        if len(given) != n:
            raise ValueError(
                f"{op}: output_shape must list {n} spatial sizes or the full rank-{n + 2} shape; "
                f"got {tuple(output_shape)}."
            )
        spatial = given
    # The forward convolution of the output must give back the input's spatial shape.
    pads = explicit_padding(spatial, window, strides, dilations, padding, op)
    expected = tuple(output_size(size, k, s, d, p)
                     for size, k, s, d, p in zip(spatial, window, strides, dilations, pads, strict=True))
    if expected != tuple(x_shape[1:-1]):
        raise ValueError(
            f"{op}: an output of spatial shape {spatial} convolved with strides {strides} and "
            f"{padding!r} padding has spatial shape {expected}, not the input's "
            f"{tuple(x_shape[1:-1])}; pass a consistent output_shape (or None to infer it)."
        )
    input_shape = (x_shape[0],) + spatial + (w_shape[-2],)
    return conv_backprop_input_(x, w, input_shape=input_shape, strides=strides, padding=pads,
                                dilations=dilations, groups=1)


def _make_transposed(n):
    op = f"conv{n}d_transpose"

    def conv_transpose(input, filter, output_shape=None, strides=(1,) * n, padding="valid",
                       dilations=(1,) * n):
        return _transposed(input, filter, n, output_shape, strides, padding, dilations, op)

    conv_transpose.__name__ = conv_transpose.__qualname__ = op
    return conv_transpose


_TRANSPOSED_DOC = """Transposed {n}-D convolution (the gradient of ``conv{n}d`` w.r.t. its input).

Parameters
----------
input : Tensor
    ``(batch, *spatial, in_channels)``.
filter : Tensor
    ``{layout}``, as S4TF's ``TransposedConv{n}D``.
output_shape : tuple of ints, optional
    The full output shape or its {n} spatial sizes; when None, TF/Keras's rule:
    ``size * stride`` ("same") or ``size * stride + max(window - stride, 0)``
    ("valid"), with the dilated window.
strides, dilations : int or tuple of {n} ints
padding : "valid", "same" or {n} (before, after) pairs
    The padding of the forward convolution this transposes (explicit pairs:
    without ``output_shape``, the smallest output whose forward convolution
    has the input's size, ``(size - 1) * stride + window - before - after``).

Returns
-------
Tensor
    ``(batch, *output_spatial, out_channels)``.

Examples
--------
>>> import s4tf
>>> x = s4tf.ones([1{ones}, 3])
>>> s4tf.nn.conv{n}d_transpose(x, s4tf.ones({filt}), strides=2, padding="same").shape
{result}
"""
conv1d_transpose = _make_transposed(1)
conv1d_transpose.__doc__ = _TRANSPOSED_DOC.format(
    n=1, layout="(width, out, in)", ones=", 4", filt="[3, 2, 3]", result="(1, 8, 2)")
conv2d_transpose = _make_transposed(2)
conv2d_transpose.__doc__ = _TRANSPOSED_DOC.format(
    n=2, layout="(height, width, out, in)", ones=", 4, 4", filt="[3, 3, 2, 3]",
    result="(1, 8, 8, 2)")
conv3d_transpose = _make_transposed(3)
conv3d_transpose.__doc__ = _TRANSPOSED_DOC.format(
    n=3, layout="(depth, height, width, out, in)", ones=", 2, 2, 2", filt="[3, 3, 3, 2, 3]",
    result="(1, 4, 4, 4, 2)")
