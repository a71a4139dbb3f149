"""Transposed convolution layers: TransposedConv1D/2D/3D (S4TF's filter layouts)."""

from __future__ import annotations

import typing

from .. import dtypes as _dtypes
from .. import nn
from ..activations import identity
from ..differentiable import no_derivative
from ..initializers import glorot_uniform, zeros
from ..ops.shapes import shape_of
from ..tensor import Tensor
from .convolutional import channels_last_check, check_filter_shape, check_padding, expand
from .layer import Layer

__all__ = ["TransposedConv1D", "TransposedConv2D", "TransposedConv3D"]


class _TransposedConv(Layer):
    filter: Tensor
    bias: Tensor | None
    strides: tuple = no_derivative()
    padding: str = no_derivative()
    dilations: tuple = no_derivative()
    activation: typing.Callable = no_derivative()

    _rank: typing.ClassVar[int] = 0

    def __init__(self, filter_shape, strides=1, padding: str = "valid", dilations=1,
                 activation=identity, use_bias: bool = True, filter_initializer=glorot_uniform,
                 dtype=_dtypes.float32):
        name, n = type(self).__name__, self._rank
        shape = check_filter_shape(filter_shape, n + 2, "(*window, out_channels, in_channels)", name)
        self.filter = filter_initializer(shape, dtype=dtype)
        self.bias = zeros((shape[-2],), dtype=dtype) if use_bias else None
        self.strides = expand(strides, n, "strides", name)
        self.padding = check_padding(padding, name)
        self.dilations = expand(dilations, n, "dilations", name)
        self.activation = activation

    def __call__(self, input):
        n = self._rank
        channels_last_check(self, input, n, shape_of(self.filter)[-1])
        conv = (nn.conv1d_transpose, nn.conv2d_transpose, nn.conv3d_transpose)[n - 1]
        out = conv(input, self.filter, strides=self.strides, padding=self.padding,
                   dilations=self.dilations)
        return self.activation(out + self.bias if self.bias is not None else out)


class TransposedConv1D(_TransposedConv):
    """Transposed 1-D convolution; ``filter`` ``(w, out, in)``, ``bias`` ``(out,)``.

    ``TransposedConv1D(filter_shape, strides=1, padding="valid", dilations=1,
    activation=identity, use_bias=True, ...)``; the output width is
    ``width * stride`` ("same") or ``width * stride + max(w - stride, 0)`` ("valid").

    Examples
    --------
    >>> import s4tf
    >>> up = s4tf.layers.TransposedConv1D(filter_shape=(3, 2, 4), strides=2, padding="same")
    >>> up(s4tf.ones([1, 5, 4])).shape
    (1, 10, 2)
    """

    _rank = 1


class TransposedConv2D(_TransposedConv):
    """Transposed 2-D convolution; ``filter`` ``(h, w, out, in)``, ``bias`` ``(out,)``.

    Examples
    --------
    >>> import s4tf
    >>> up = s4tf.layers.TransposedConv2D(filter_shape=(3, 3, 2, 4), strides=2, padding="same")
    >>> up(s4tf.ones([1, 4, 4, 4])).shape
    (1, 8, 8, 2)
    """

    _rank = 2


class TransposedConv3D(_TransposedConv):
    """Transposed 3-D convolution; ``filter`` ``(d, h, w, out, in)``, ``bias`` ``(out,)``.

    Examples
    --------
    >>> import s4tf
    >>> up = s4tf.layers.TransposedConv3D(filter_shape=(2, 2, 2, 1, 3), strides=2)
    >>> up(s4tf.ones([1, 2, 2, 2, 3])).shape
    (1, 4, 4, 4, 1)
    """

    _rank = 3
