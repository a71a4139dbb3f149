"""Convolutions: one N-dimensional primitive and its two transposes, as TF has them.

``conv(x, w)`` is bilinear, so its derivatives close over three primitives:

====================  ==============================  ==============================
primitive             cotangent of argument 1         cotangent of argument 2
====================  ==============================  ==============================
conv(x, w)            conv_backprop_input(g, w)       conv_backprop_filter(x, g)
conv_backprop_input   conv(a, w)                      conv_backprop_filter(a, g)
  (g, w)
conv_backprop_filter  conv_backprop_input(g, v)       conv(x, v)
  (x, g)
====================  ==============================  ==============================

and each JVP is the op itself applied to one tangent at a time. Derivatives of
derivatives are therefore convolutions again, to any order. Transposed
convolutions *are* ``conv_backprop_input`` (as TF's ``conv2d_transpose``;
``transposed_convolution.py``), and depthwise convolution is ``conv`` with one channel group per input channel.
"""

from __future__ import annotations

from .batching_helpers import batch_size, broadcast_batch, move_axis, move_axis_to_front
from .primitive import primitive
from .shapes import _reshape, _transpose, reshape, shape_of
from .window_geometry import (
    check_input,
    expand,
    explicit_padding,
    padding_pairs,
)

__all__ = ["conv1d", "conv2d", "conv3d", "depthwise_conv2d", "separable_conv2d"]


def _describe(args, error):
    shapes = " and ".join(str(shape_of(a)) for a in args)
    return f"convolution failed on operands of shapes {shapes}: {error}"


# Batching rules (s4tf.vmap). Never a loop over examples: a batch beside the
# convolution's own batch axis N is folded into it; a batch of filters is stacked
# along the output channels; when both sides are batched (per-example gradients),
# each example becomes a channel group of one grouped convolution, its filter
# channels ordered example-major, which is what ``groups`` reads.
def _fold(x, d):
    """``(B, N, ...)`` (the batch moved to the front) as ``(B * N, ...)``."""
    x = move_axis_to_front(x, d)
    shape = shape_of(x)
    return _reshape(x, shape=(shape[0] * shape[1], *shape[2:]))


def _unfold(y, size):
    """``(B * N, ...)`` as ``(B, N, ...)``."""
    shape = shape_of(y)
    return _reshape(y, shape=(size, shape[0] // size, *shape[1:]))


def _into_channels(x, d):
    """The batch moved beside the channels and merged with them: ``(..., B * C)``."""
    x = move_axis(move_axis_to_front(x, d), 0, len(shape_of(x)) - 2)
    shape = shape_of(x)
    return _reshape(x, shape=(*shape[:-2], shape[-2] * shape[-1]))


def _out_of_channels(y, size):
    """``(..., B * C)`` as ``(..., B, C)``; the batch axis is ``rank - 2``."""
    shape = shape_of(y)
    y = _reshape(y, shape=(*shape[:-1], size, shape[-1] // size))
    return y, len(shape) - 1


def _inside_groups(t, d, groups):
    """A batched channel axis ``O`` (``groups`` blocks) as ``groups`` blocks of ``B * O / groups``.

    For an operand whose batch must stay within each channel group (a batch of
    filters of a grouped convolution): channel ``(g, b, j)`` is example ``b``'s
    channel ``g * O / groups + j``.
    """
    t = move_axis(move_axis_to_front(t, d), 0, len(shape_of(t)) - 2)  # (..., B, O)
    shape = shape_of(t)
    size, channels = shape[-2], shape[-1]
    if groups > 1:
        t = _reshape(t, shape=(*shape[:-1], groups, channels // groups))
        rank = len(shape) + 1
        t = _transpose(t, perm=(*range(rank - 3), rank - 2, rank - 3, rank - 1))
    return _reshape(t, shape=(*shape[:-2], size * channels))


def _outside_groups(y, size, groups):
    """The inverse of :func:`_inside_groups` on a result: ``(..., B, O)``, the batch at ``rank - 2``."""
    shape = shape_of(y)
    channels = shape[-1] // size
    if groups > 1:
        y = _reshape(y, shape=(*shape[:-1], groups, size, channels // groups))
        rank = len(shape) + 2
        y = _transpose(y, perm=(*range(rank - 3), rank - 2, rank - 3, rank - 1))
    return _reshape(y, shape=(*shape[:-1], size, channels)), len(shape) - 1


def _conv_batch(args, dims, *, strides, padding, dilations, groups):
    (x, w), (dx, dw) = args, dims
    size = batch_size(args, dims)
    p = dict(strides=strides, padding=padding, dilations=dilations)
    if dw is None:
        return _unfold(conv_(_fold(x, dx), w, groups=groups, **p), size), 0
    if dx is None:
        return _outside_groups(conv_(x, _inside_groups(w, dw, groups), groups=groups, **p),
                               size, groups)
    y = conv_(_into_channels(x, dx), _into_channels(w, dw), groups=size * groups, **p)
    return _out_of_channels(y, size)


def _conv_backprop_input_batch(args, dims, *, input_shape, strides, padding, dilations, groups):
    (g, w), (dg, dw) = args, dims
    size = batch_size(args, dims)
    p = dict(strides=strides, padding=padding, dilations=dilations)
    if dw is None:
        shape = (size * input_shape[0], *input_shape[1:])
        return _unfold(conv_backprop_input_(_fold(g, dg), w, input_shape=shape, groups=groups,
                                            **p), size), 0
    g, w = broadcast_batch(args, dims, size)
    shape = (*input_shape[:-1], size * input_shape[-1])
    y = conv_backprop_input_(_into_channels(g, 0), _into_channels(w, 0), input_shape=shape,
                             groups=size * groups, **p)
    return _out_of_channels(y, size)


def _conv_backprop_filter_batch(args, dims, *, filter_shape, strides, padding, dilations,
                                groups):
    (x, g), (dx, dg) = args, dims
    size = batch_size(args, dims)
    p = dict(strides=strides, padding=padding, dilations=dilations)
    if dx is None:
        shape = (*filter_shape[:-1], size * filter_shape[-1])
        return _outside_groups(conv_backprop_filter_(x, _inside_groups(g, dg, groups),
                                                     filter_shape=shape, groups=groups, **p),
                               size, groups)
    x, g = broadcast_batch(args, dims, size)
    shape = (*filter_shape[:-1], size * filter_shape[-1])
    y = conv_backprop_filter_(_into_channels(x, 0), _into_channels(g, 0), filter_shape=shape,
                              groups=size * groups, **p)
    return _out_of_channels(y, size)


conv_ = primitive(
    "conv",
    promote=True,
    describe=_describe,
    batch=_conv_batch,
    vjp=(lambda g, x, w, out, **p: conv_backprop_input_(g, w, input_shape=shape_of(x), **p),
         lambda g, x, w, out, **p: conv_backprop_filter_(x, g, filter_shape=shape_of(w), **p)),
    jvp=(lambda t, x, w, out, **p: conv_(t, w, **p),
         lambda t, x, w, out, **p: conv_(x, t, **p)),
)
conv_backprop_input_ = primitive(
    "conv_backprop_input",
    promote=True,
    describe=_describe,
    batch=_conv_backprop_input_batch,
    vjp=(lambda a, g, w, out, input_shape, **p: conv_(a, w, **p),
         lambda a, g, w, out, input_shape, **p:
             conv_backprop_filter_(a, g, filter_shape=shape_of(w), **p)),
    jvp=(lambda t, g, w, out, input_shape, **p:
             conv_backprop_input_(t, w, input_shape=input_shape, **p),
         lambda t, g, w, out, input_shape, **p:
             conv_backprop_input_(g, t, input_shape=input_shape, **p)),
)
conv_backprop_filter_ = primitive(
    "conv_backprop_filter",
    promote=True,
    describe=_describe,
    batch=_conv_backprop_filter_batch,
    vjp=(lambda v, x, g, out, filter_shape, **p:
             conv_backprop_input_(g, v, input_shape=shape_of(x), **p),
         lambda v, x, g, out, filter_shape, **p: conv_(x, v, **p)),
    jvp=(lambda t, x, g, out, filter_shape, **p:
             conv_backprop_filter_(t, g, filter_shape=filter_shape, **p),
         lambda t, x, g, out, filter_shape, **p:
             conv_backprop_filter_(x, t, filter_shape=filter_shape, **p)),
)


def check_filter(w, n, op, what):
    """``w``'s shape, or ``ValueError`` naming ``op`` and the layout ``what`` when not rank ``n + 2``."""
    shape = shape_of(w)
    if len(shape) != n + 2:
        raise ValueError(f"{op}: the filter must have rank {n + 2}, {what}; got shape {shape}.")
    return shape


def _convolve(x, w, n, strides, padding, dilations, groups, op):
    """Check arguments, resolve TF padding and apply the ``conv`` primitive."""
    x_shape = check_input(x, n, op)
    w_shape = shape_of(w)
    strides = expand(strides, n, "strides", op)
    dilations = expand(dilations, n, "dilations", op)
    if w_shape[-2] * groups != x_shape[-1] or w_shape[-1] % groups:
        raise ValueError(
            f"{op}: the input has {x_shape[-1]} channels (shape {x_shape}) but the filter of "
            f"shape {w_shape} expects {w_shape[-2] * groups}; the filter's second-to-last axis "
            "is the input channel count. Fix the filter shape or the input."
        )
    pads = explicit_padding(x_shape[1:-1], w_shape[:-2], strides, dilations, padding, op)
    return conv_(x, w, strides=strides, padding=pads, dilations=dilations, groups=groups)


#: The filter layout of each rank, as the errors name it (transposed: "out, in").
FILTER_LAYOUTS = {1: "(width, in, out)", 2: "(height, width, in, out)",
                  3: "(depth, height, width, in, out)"}


def _make_conv(n):
    op = f"conv{n}d"

    def conv(input, filter, strides=(1,) * n, padding="valid", dilations=(1,) * n):
        check_filter(filter, n, op, FILTER_LAYOUTS[n])
        return _convolve(input, filter, n, strides, padding, dilations, 1, op)

    conv.__name__ = conv.__qualname__ = op
    return conv


conv1d = _make_conv(1)
conv1d.__doc__ = """1-D convolution (TF's cross-correlation) of NWC ``input`` with a ``(w, in, out)`` filter.

Parameters
----------
input : Tensor
    ``(batch, width, in_channels)``.
filter : Tensor
    ``(width, in_channels, out_channels)``.
strides, dilations : int or tuple of 1 int
padding : "valid", "same" or ((before, after),)
    TF semantics: "same" gives ``ceil(width / stride)`` outputs, the odd padding
    element after; or explicit zeros before and after the input.

Returns
-------
Tensor
    ``(batch, out_width, out_channels)``.

Examples
--------
>>> import s4tf
>>> s4tf.nn.conv1d(s4tf.ones([1, 5, 2]), s4tf.ones([3, 2, 4]), padding="same").shape
(1, 5, 4)
"""
conv2d = _make_conv(2)
conv2d.__doc__ = """2-D convolution of NHWC ``input`` with an HWIO filter, as S4TF's ``conv2D``.

Parameters
----------
input : Tensor
    ``(batch, height, width, in_channels)``.
filter : Tensor
    ``(height, width, in_channels, out_channels)``.
strides, dilations : int or tuple of 2 ints
padding : "valid", "same" or ((top, bottom), (left, right))
    TF semantics: "same" gives ``ceil(size / stride)`` outputs per axis, the odd
    padding element after; or explicit zeros on each side (as
    ``jax.lax.conv_general_dilated``; PyTorch's ``padding=p`` is ``((p, p), (p, p))``),
    applied inside the kernel without copying the input.

Returns
-------
Tensor
    ``(batch, out_height, out_width, out_channels)``.

Examples
--------
>>> import s4tf
>>> x, w = s4tf.ones([2, 28, 28, 1]), s4tf.ones([5, 5, 1, 6])
>>> s4tf.nn.conv2d(x, w, padding="same").shape
(2, 28, 28, 6)
>>> s4tf.nn.conv2d(x, w, strides=2).shape
(2, 12, 12, 6)
>>> s4tf.nn.conv2d(x, w, strides=2, padding=((2, 2), (2, 2))).shape
(2, 14, 14, 6)
"""
conv3d = _make_conv(3)
conv3d.__doc__ = """3-D convolution of NDHWC ``input`` with a ``(d, h, w, in, out)`` filter.

Parameters
----------
input : Tensor
    ``(batch, depth, height, width, in_channels)``.
filter : Tensor
    ``(depth, height, width, in_channels, out_channels)``.
strides, dilations : int or tuple of 3 ints
padding : "valid", "same" or 3 (before, after) pairs

Returns
-------
Tensor
    ``(batch, out_depth, out_height, out_width, out_channels)``.

Examples
--------
>>> import s4tf
>>> s4tf.nn.conv3d(s4tf.ones([1, 4, 4, 4, 1]), s4tf.ones([2, 2, 2, 1, 3])).shape
(1, 3, 3, 3, 3)
"""


def depthwise_conv2d(input, filter, strides=(1, 1), padding="valid", dilations=(1, 1)):
    """Depthwise 2-D convolution: each input channel convolved with its own filters.

    Parameters
    ----------
    input : Tensor
        ``(batch, height, width, in_channels)``.
    filter : Tensor
        ``(height, width, in_channels, multiplier)``.
    strides, dilations : int or tuple of 2 ints
    padding : "valid", "same" or ((top, bottom), (left, right))

    Returns
    -------
    Tensor
        ``(batch, out_height, out_width, in_channels * multiplier)``; output channel
        ``c * multiplier + m`` comes from input channel ``c`` and filter ``[..., c, m]``
        (TF's ordering).

    Examples
    --------
    >>> import s4tf
    >>> y = s4tf.nn.depthwise_conv2d(s4tf.ones([1, 5, 5, 3]), s4tf.ones([3, 3, 3, 2]))
    >>> y.shape
    (1, 3, 3, 6)
    """
    op = "depthwise_conv2d"
    x_shape = check_input(input, 2, op)
    w_shape = check_filter(filter, 2, op, "(height, width, in_channels, multiplier)")
    if w_shape[2] != x_shape[-1]:
        raise ValueError(
            f"{op}: the input has {x_shape[-1]} channels (shape {x_shape}) but the filter of "
            f"shape {w_shape} is for {w_shape[2]}; the filter is (height, width, in_channels, "
            "multiplier)."
        )
    channels = x_shape[-1]
    # (h, w, C, M) -> (h, w, 1, C * M): one group per channel, outputs c * M + m.
    grouped = reshape(filter, w_shape[:2] + (1, channels * w_shape[3]))
    return _convolve(input, grouped, 2, strides, padding, dilations, channels, op)


def separable_conv2d(input, depthwise_filter, pointwise_filter, strides=(1, 1), padding="valid",
                     dilations=(1, 1)):
    """Depthwise-separable 2-D convolution: a depthwise convolution, then a 1x1 one.

    TensorFlow's ``tf.nn.separable_conv2d``: ``strides``, ``padding`` and
    ``dilations`` apply to the depthwise step; the pointwise step mixes the
    ``in_channels * multiplier`` channels with stride 1. Being built from
    :func:`depthwise_conv2d` and :func:`conv2d`, it differentiates to any order.

    Parameters
    ----------
    input : Tensor
        ``(batch, height, width, in_channels)``.
    depthwise_filter : Tensor
        ``(height, width, in_channels, multiplier)``.
    pointwise_filter : Tensor
        ``(1, 1, in_channels * multiplier, out_channels)``.
    strides, dilations : int or tuple of 2 ints
    padding : "valid", "same" or ((top, bottom), (left, right))

    Returns
    -------
    Tensor
        ``(batch, out_height, out_width, out_channels)``.

    Examples
    --------
    >>> import s4tf
    >>> y = s4tf.nn.separable_conv2d(s4tf.ones([1, 5, 5, 3]), s4tf.ones([3, 3, 3, 2]),
    ...                              s4tf.ones([1, 1, 6, 4]), padding="same")
    >>> y.shape
    (1, 5, 5, 4)
    >>> float(y[0, 2, 2, 0])      # 3 channels x 2 multipliers x 9 taps, summed over 6
    54.0
    """
    op = "separable_conv2d"
    x_shape = check_input(input, 2, op)
    padding = padding_pairs(padding, 2, op)  # here, so that an error names this op
    d_shape = check_filter(depthwise_filter, 2, op,
                            "depthwise_filter is (height, width, in_channels, multiplier)")
    p_shape = check_filter(pointwise_filter, 2, op,
                            "pointwise_filter is (1, 1, in_channels * multiplier, out_channels)")
    # Checked here, before either step, so that errors name this op and all three shapes.
    if d_shape[2] != x_shape[-1] or p_shape[:3] != (1, 1, d_shape[2] * d_shape[3]):
        raise ValueError(
            f"{op}: input {x_shape}, depthwise_filter {d_shape} and pointwise_filter {p_shape} "
            f"do not fit: the depthwise filter must be (height, width, {x_shape[-1]}, multiplier) "
            f"for an input of {x_shape[-1]} channels, and the pointwise filter "
            f"(1, 1, {d_shape[2] * d_shape[3]}, out_channels) to take its "
            f"{d_shape[2]} * {d_shape[3]} output channels."
        )
    depthwise = depthwise_conv2d(input, depthwise_filter, strides, padding, dilations)
    return _convolve(depthwise, pointwise_filter, 2, 1, "valid", 1, 1, op)
