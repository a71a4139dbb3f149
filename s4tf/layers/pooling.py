"""Pooling layers: Max/Avg pooling over 1-3 spatial axes, global and adaptive pools.

Thin layers over :mod:`s4tf.nn` (TF semantics: "same" average pooling excludes
the padding from each window's count, as does explicit ``(before, after)``
padding). They have no parameters. As for convolutions, ``pool(x,
padding=p)`` uses padding ``p`` instead of the layer's own for that call.
"""

from __future__ import annotations

import typing

from .. import nn
from ..differentiable import no_derivative
from ..ops.window_geometry import expand as expand_sizes
from ..ops.window_geometry import padding_pairs
from .convolutional import expand, padding_for_call
from .layer import Layer, check_input_shape

__all__ = [
    "AdaptiveAvgPool2D", "AvgPool1D", "AvgPool2D", "AvgPool3D", "GlobalAvgPool1D", "GlobalAvgPool2D",
    "GlobalAvgPool3D", "GlobalMaxPool1D", "GlobalMaxPool2D", "GlobalMaxPool3D", "MaxPool1D",
    "MaxPool2D", "MaxPool3D",
]


def _check_rank(layer, input, n):
    check_input_shape(layer, input, (None,) * (n + 2),
                      f"Inputs are channels-last: (batch, {n} spatial axes, channels).")


class _Pool(Layer):
    pool_size: tuple = no_derivative()
    strides: tuple = no_derivative()
    padding: str | tuple = no_derivative()

    _rank: typing.ClassVar[int] = 0
    _kind: typing.ClassVar[str] = ""

    def __init__(self, pool_size, strides=None, padding: str | tuple = "valid"):
        name, n = type(self).__name__, self._rank
        self.pool_size = expand(pool_size, n, "pool_size", name)
        self.strides = self.pool_size if strides is None else expand(strides, n, "strides", name)
        self.padding = padding_pairs(padding, n, name)

    def __call__(self, input, padding=None):
        _check_rank(self, input, self._rank)
        pool = getattr(nn, f"{self._kind}_pool{self._rank}d")
        return pool(input, pool_size=self.pool_size, strides=self.strides,
                    padding=padding_for_call(self, padding, self._rank))


class MaxPool1D(_Pool):
    """Maximum over windows of ``(batch, width, channels)``.

    ``MaxPool1D(pool_size, strides=None, padding="valid")``; ``strides``
    defaults to ``pool_size``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.layers.MaxPool1D(pool_size=2)(s4tf.ones([1, 6, 3])).shape
    (1, 3, 3)
    """

    _rank, _kind = 1, "max"


class MaxPool2D(_Pool):
    """Maximum over windows of NHWC inputs; a tie sends the derivative to its first maximum.

    ``MaxPool2D(pool_size, strides=None, padding="valid")``: ``padding`` is
    "valid", "same" or explicit ``((top, bottom), (left, right))``, each side
    less than the window (the padding never wins a maximum).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.layers.MaxPool2D(pool_size=(2, 2), strides=(2, 2))(s4tf.ones([1, 4, 4, 3])).shape
    (1, 2, 2, 3)
    >>> s4tf.layers.MaxPool2D(pool_size=3, strides=2,
    ...                       padding=((1, 1), (1, 1)))(s4tf.ones([1, 8, 8, 3])).shape
    (1, 4, 4, 3)
    """

    _rank, _kind = 2, "max"


class MaxPool3D(_Pool):
    """Maximum over windows of NDHWC inputs.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.layers.MaxPool3D(pool_size=2)(s4tf.ones([1, 4, 4, 4, 2])).shape
    (1, 2, 2, 2, 2)
    """

    _rank, _kind = 3, "max"


class AvgPool1D(_Pool):
    """Mean over windows of ``(batch, width, channels)``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.layers.AvgPool1D(pool_size=2, padding="same")(s4tf.ones([1, 5, 3])).shape
    (1, 3, 3)
    """

    _rank, _kind = 1, "avg"


class AvgPool2D(_Pool):
    """Mean over windows of NHWC inputs ("same" excludes padding from the count).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.layers.AvgPool2D(pool_size=(2, 2), strides=(2, 2))(s4tf.ones([1, 28, 28, 6])).shape
    (1, 14, 14, 6)
    """

    _rank, _kind = 2, "avg"


class AvgPool3D(_Pool):
    """Mean over windows of NDHWC inputs.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.layers.AvgPool3D(pool_size=2)(s4tf.ones([1, 4, 4, 4, 2])).shape
    (1, 2, 2, 2, 2)
    """

    _rank, _kind = 3, "avg"


class _GlobalPool(Layer):
    _rank: typing.ClassVar[int] = 0
    _kind: typing.ClassVar[str] = ""

    def __call__(self, input):
        _check_rank(self, input, self._rank)
        return getattr(nn, f"global_{self._kind}_pool{self._rank}d")(input)


class GlobalAvgPool1D(_GlobalPool):
    """Mean over the width axis: ``(batch, width, channels) -> (batch, channels)``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.layers.GlobalAvgPool1D()(s4tf.ones([2, 5, 3])).shape
    (2, 3)
    """

    _rank, _kind = 1, "avg"


class GlobalAvgPool2D(_GlobalPool):
    """Mean over height and width: NHWC ``-> (batch, channels)``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.layers.GlobalAvgPool2D()(s4tf.ones([2, 4, 4, 3])).shape
    (2, 3)
    """

    _rank, _kind = 2, "avg"


class GlobalAvgPool3D(_GlobalPool):
    """Mean over the three spatial axes: NDHWC ``-> (batch, channels)``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.layers.GlobalAvgPool3D()(s4tf.ones([2, 2, 2, 2, 3])).shape
    (2, 3)
    """

    _rank, _kind = 3, "avg"


class GlobalMaxPool1D(_GlobalPool):
    """Maximum over the width axis: ``(batch, width, channels) -> (batch, channels)``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.layers.GlobalMaxPool1D()(s4tf.ones([2, 5, 3])).shape
    (2, 3)
    """

    _rank, _kind = 1, "max"


class GlobalMaxPool2D(_GlobalPool):
    """Maximum over height and width: NHWC ``-> (batch, channels)``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.layers.GlobalMaxPool2D()(s4tf.ones([2, 4, 4, 3])).shape
    (2, 3)
    """

    _rank, _kind = 2, "max"


class GlobalMaxPool3D(_GlobalPool):
    """Maximum over the three spatial axes: NDHWC ``-> (batch, channels)``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.layers.GlobalMaxPool3D()(s4tf.ones([2, 2, 2, 2, 3])).shape
    (2, 3)
    """

    _rank, _kind = 3, "max"


class AdaptiveAvgPool2D(Layer):
    """Average pooling of NHWC inputs to a fixed spatial size (PyTorch's ``AdaptiveAvgPool2d``).

    ``AdaptiveAvgPool2D(output_size)``: output row ``i`` of ``out`` averages
    input rows ``floor(i * H / out)`` to ``ceil((i + 1) * H / out)``
    (exclusive), likewise for columns; see :func:`s4tf.nn.adaptive_avg_pool2d`.
    Any input size works, smaller ones too (bins then repeat).

    Examples
    --------
    >>> import s4tf
    >>> pool = s4tf.layers.AdaptiveAvgPool2D(output_size=(7, 7))
    >>> pool(s4tf.ones([2, 14, 14, 3])).shape, pool(s4tf.ones([2, 1, 1, 3])).shape
    ((2, 7, 7, 3), (2, 7, 7, 3))
    """

    output_size: tuple = no_derivative()

    def __init__(self, output_size):
        self.output_size = expand_sizes(output_size, 2, "output_size", "AdaptiveAvgPool2D")

    def __call__(self, input):
        _check_rank(self, input, 2)
        return nn.adaptive_avg_pool2d(input, self.output_size)
