"""Convolution layers: Conv1D/2D/3D, DepthwiseConv2D, SeparableConv1D/2D.

Channels-last inputs and HWIO filters, as in Swift for TensorFlow; the math is
:mod:`s4tf.nn` (TF "same"/"valid" padding, the odd padding element after, or
explicit ``(before, after)`` pairs per spatial axis). Transposed convolutions
are in :mod:`s4tf.layers.transposed`.

``layer(x, padding=p)`` runs a convolution (or a pool) with padding ``p``
instead of its own for that one call: the model zoo keeps layers saved as
"valid" (their checkpoints unchanged) and runs them with PyTorch's padding
this way, inside the kernels, where it used to zero-pad the input first.
"""

from __future__ import annotations

import typing

from .. import dtypes as _dtypes
from .. import nn
from .._sizes import as_int, per_axis
from ..activations import identity
from ..differentiable import no_derivative
from ..initializers import glorot_uniform, zeros
from ..ops import expand_dims, squeeze
from ..ops.shapes import shape_of
from ..ops.window_geometry import padding_pairs
from ..tensor import Tensor
from .layer import Layer, check_input_shape

__all__ = ["Conv1D", "Conv2D", "Conv3D", "DepthwiseConv2D", "SeparableConv1D", "SeparableConv2D"]


def expand(value, n: int, name: str, layer: str) -> tuple[int, ...]:
    """``value`` (an int or n ints) as a tuple of n positive ints."""
    return per_axis(value, n, name, layer)


def padding_for_call(layer, padding, n: int) -> str | tuple:
    """The padding one call of ``layer`` runs with: its own, or ``padding`` when given.

    A call's ``padding=`` is checked as the constructor's is
    (:func:`~s4tf.ops.window_geometry.padding_pairs`), so an error names the
    layer rather than the op it calls.
    """
    return layer.padding if padding is None else padding_pairs(padding, n, type(layer).__name__)


def check_filter_shape(filter_shape, rank: int, layout: str, layer: str,
                       argument: str = "filter_shape") -> tuple[int, ...]:
    try:
        shape = tuple(as_int(n) for n in filter_shape)
    except TypeError:
        shape = ()
    if len(shape) != rank or not all(n is not None and n > 0 for n in shape):
        raise ValueError(
            f"{layer}: {argument} must be {rank} positive ints {layout}, got {filter_shape!r}."
        )
    return shape


def channels_last_check(layer, input, n: int, channels: int) -> None:
    check_input_shape(layer, input, (None,) * (n + 1) + (channels,),
                      f"Inputs are channels-last: (batch, {n} spatial axes, {channels} channels).")


class _Conv(Layer):
    filter: Tensor
    bias: Tensor | None
    strides: tuple = no_derivative()
    padding: str | tuple = no_derivative()
    dilations: tuple = no_derivative()
    activation: typing.Callable = no_derivative()

    _rank: typing.ClassVar[int] = 0
    _layout: typing.ClassVar[str] = ""
    # Where the filter keeps its channels, and the function per rank: transposed
    # convolutions (layers/transposed.py) differ from these only here.
    _in_axis: typing.ClassVar[int] = -2
    _out_axis: typing.ClassVar[int] = -1
    _functions: typing.ClassVar[tuple] = (nn.conv1d, nn.conv2d, nn.conv3d)

    def __init__(self, filter_shape, strides=1, padding: str | tuple = "valid", dilations=1,
                 activation=identity, use_bias: bool = True, filter_initializer=glorot_uniform,
                 dtype=_dtypes.float32):
        name, n = type(self).__name__, self._rank
        shape = check_filter_shape(filter_shape, n + 2, self._layout, name)
        self.filter = filter_initializer(shape, dtype=dtype)
        self.bias = zeros((shape[self._out_axis],), dtype=dtype) if use_bias else None
        self.strides = expand(strides, n, "strides", name)
        self.padding = padding_pairs(padding, n, name)
        self.dilations = expand(dilations, n, "dilations", name)
        self.activation = activation

    def __call__(self, input, padding=None):
        n = self._rank
        channels_last_check(self, input, n, shape_of(self.filter)[self._in_axis])
        out = self._functions[n - 1](input, self.filter, strides=self.strides,
                                     padding=padding_for_call(self, padding, n),
                                     dilations=self.dilations)
        return self.activation(out + self.bias if self.bias is not None else out)


class Conv1D(_Conv):
    """1-D convolution over ``(batch, width, channels)``; ``filter`` ``(w, in, out)``.

    ``Conv1D(filter_shape, strides=1, padding="valid", dilations=1,
    activation=identity, use_bias=True, filter_initializer=glorot_uniform,
    dtype=float32)``; ``bias`` ``(out,)`` starts at zero.

    Examples
    --------
    >>> import s4tf
    >>> conv = s4tf.layers.Conv1D(filter_shape=(3, 2, 4), padding="same")
    >>> conv(s4tf.ones([1, 10, 2])).shape
    (1, 10, 4)
    """

    _rank = 1
    _layout = "(width, in_channels, out_channels)"


class Conv2D(_Conv):
    """2-D convolution over NHWC inputs; ``filter`` ``(h, w, in, out)``, ``bias`` ``(out,)``.

    ``Conv2D(filter_shape, strides=1, padding="valid", dilations=1,
    activation=identity, use_bias=True, filter_initializer=glorot_uniform,
    dtype=float32)``, S4TF's defaults. ``padding`` is "valid", "same" or
    explicit ``((top, bottom), (left, right))`` (PyTorch's ``padding=1`` is
    ``((1, 1), (1, 1))``).

    Examples
    --------
    >>> import s4tf
    >>> conv = s4tf.layers.Conv2D(filter_shape=(5, 5, 1, 6), padding="same", activation=s4tf.relu)
    >>> conv(s4tf.ones([2, 28, 28, 1])).shape
    (2, 28, 28, 6)
    >>> s4tf.layers.Conv2D(filter_shape=(3, 3, 1, 6), strides=2,
    ...                    padding=((1, 1), (1, 1)))(s4tf.ones([2, 28, 28, 1])).shape
    (2, 14, 14, 6)
    """

    _rank = 2
    _layout = "(height, width, in_channels, out_channels)"


class Conv3D(_Conv):
    """3-D convolution over NDHWC inputs; ``filter`` ``(d, h, w, in, out)``, ``bias`` ``(out,)``.

    Examples
    --------
    >>> import s4tf
    >>> conv = s4tf.layers.Conv3D(filter_shape=(2, 2, 2, 1, 3), strides=2)
    >>> conv(s4tf.ones([1, 4, 4, 4, 1])).shape
    (1, 2, 2, 2, 3)
    """

    _rank = 3
    _layout = "(depth, height, width, in_channels, out_channels)"


class DepthwiseConv2D(Layer):
    """Each input channel convolved with its own ``multiplier`` filters.

    ``DepthwiseConv2D(filter_shape, strides=1, padding="valid", dilations=1,
    activation=identity, use_bias=True, filter_initializer=glorot_uniform,
    dtype=float32)``; ``filter`` ``(h, w, in, multiplier)`` and ``bias``
    ``(in * multiplier,)``.

    Examples
    --------
    >>> import s4tf
    >>> conv = s4tf.layers.DepthwiseConv2D(filter_shape=(3, 3, 4, 2), padding="same")
    >>> conv(s4tf.ones([1, 5, 5, 4])).shape
    (1, 5, 5, 8)
    """

    filter: Tensor
    bias: Tensor | None
    strides: tuple = no_derivative()
    padding: str | tuple = no_derivative()
    dilations: tuple = no_derivative()
    activation: typing.Callable = no_derivative()

    def __init__(self, filter_shape, strides=1, padding: str | tuple = "valid", dilations=1,
                 activation=identity, use_bias: bool = True, filter_initializer=glorot_uniform,
                 dtype=_dtypes.float32):
        shape = check_filter_shape(filter_shape, 4, "(height, width, in_channels, multiplier)",
                                   "DepthwiseConv2D")
        self.filter = filter_initializer(shape, dtype=dtype)
        self.bias = zeros((shape[2] * shape[3],), dtype=dtype) if use_bias else None
        self.strides = expand(strides, 2, "strides", "DepthwiseConv2D")
        self.padding = padding_pairs(padding, 2, "DepthwiseConv2D")
        self.dilations = expand(dilations, 2, "dilations", "DepthwiseConv2D")
        self.activation = activation

    def __call__(self, input, padding=None):
        channels_last_check(self, input, 2, shape_of(self.filter)[2])
        out = nn.depthwise_conv2d(input, self.filter, strides=self.strides,
                                  padding=padding_for_call(self, padding, 2),
                                  dilations=self.dilations)
        return self.activation(out + self.bias if self.bias is not None else out)


class _Separable(Layer):
    depthwise_filter: Tensor
    pointwise_filter: Tensor
    bias: Tensor | None
    strides: tuple = no_derivative()
    padding: str | tuple = no_derivative()
    activation: typing.Callable = no_derivative()

    _rank: typing.ClassVar[int] = 0

    def __init__(self, depthwise_filter_shape, pointwise_filter_shape, strides=1,
                 padding: str | tuple = "valid", activation=identity, use_bias: bool = True,
                 filter_initializer=glorot_uniform, dtype=_dtypes.float32):
        name, n = type(self).__name__, self._rank
        depthwise = check_filter_shape(depthwise_filter_shape, n + 2,
                                       "(*window, in_channels, multiplier)", name,
                                       "depthwise_filter_shape")
        pointwise = check_filter_shape(pointwise_filter_shape, n + 2,
                                       "(*ones, in_channels * multiplier, out_channels)", name,
                                       "pointwise_filter_shape")
        if pointwise[:-2] != (1,) * n or pointwise[-2] != depthwise[-2] * depthwise[-1]:
            raise ValueError(
                f"{name}: pointwise_filter_shape must be {(1,) * n + (depthwise[-2] * depthwise[-1], 'out')} "
                f"for depthwise_filter_shape {depthwise}, got {pointwise}."
            )
        self.depthwise_filter = filter_initializer(depthwise, dtype=dtype)
        self.pointwise_filter = filter_initializer(pointwise, dtype=dtype)
        self.bias = zeros((pointwise[-1],), dtype=dtype) if use_bias else None
        self.strides = expand(strides, n, "strides", name)
        self.padding = padding_pairs(padding, n, name)
        self.activation = activation

    def __call__(self, input, padding=None):
        n = self._rank
        channels_last_check(self, input, n, shape_of(self.depthwise_filter)[-2])
        padding = padding_for_call(self, padding, n)
        if n == 1:
            # A 1-D separable convolution is a 2-D one over a height-1 image.
            padding = padding if isinstance(padding, str) else ((0, 0),) + padding
            out = squeeze(nn.separable_conv2d(
                expand_dims(input, 1), expand_dims(self.depthwise_filter, 0),
                expand_dims(self.pointwise_filter, 0), strides=(1,) + self.strides,
                padding=padding), 1)
        else:
            out = nn.separable_conv2d(input, self.depthwise_filter, self.pointwise_filter,
                                      strides=self.strides, padding=padding)
        return self.activation(out + self.bias if self.bias is not None else out)


class SeparableConv1D(_Separable):
    """A depthwise 1-D convolution followed by a pointwise (width-1) one.

    ``SeparableConv1D(depthwise_filter_shape, pointwise_filter_shape, strides=1,
    padding="valid", activation=identity, use_bias=True, ...)`` with
    ``depthwise_filter`` ``(w, in, multiplier)``, ``pointwise_filter``
    ``(1, in * multiplier, out)`` and ``bias`` ``(out,)``.

    Examples
    --------
    >>> import s4tf
    >>> conv = s4tf.layers.SeparableConv1D(depthwise_filter_shape=(3, 2, 2),
    ...                                    pointwise_filter_shape=(1, 4, 5))
    >>> conv(s4tf.ones([1, 8, 2])).shape
    (1, 6, 5)
    """

    _rank = 1


class SeparableConv2D(_Separable):
    """A depthwise 2-D convolution followed by a pointwise (1x1) one.

    ``depthwise_filter`` ``(h, w, in, multiplier)``, ``pointwise_filter``
    ``(1, 1, in * multiplier, out)``, ``bias`` ``(out,)``.

    Examples
    --------
    >>> import s4tf
    >>> conv = s4tf.layers.SeparableConv2D(depthwise_filter_shape=(3, 3, 2, 1),
    ...                                    pointwise_filter_shape=(1, 1, 2, 4), padding="same")
    >>> conv(s4tf.ones([1, 6, 6, 2])).shape
    (1, 6, 6, 4)
    """

    _rank = 2
