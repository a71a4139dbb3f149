"""Transposed convolution layers: TransposedConv1D/2D/3D (S4TF's filter layouts)."""

from __future__ import annotations

import typing

from .. import nn
from .convolutional import _Conv

__all__ = ["TransposedConv1D", "TransposedConv2D", "TransposedConv3D"]


class _TransposedConv(_Conv):
    # S4TF's TransposedConv keeps filters as (*window, out_channels, in_channels).
    _layout: typing.ClassVar[str] = "(*window, out_channels, in_channels)"
    _in_axis: typing.ClassVar[int] = -1
    _out_axis: typing.ClassVar[int] = -2
    _functions: typing.ClassVar[tuple] = (
        nn.conv1d_transpose, nn.conv2d_transpose, nn.conv3d_transpose,
    )


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
