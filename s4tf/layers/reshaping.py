"""Layers that only rearrange values: Flatten, Reshape, ZeroPadding*, UpSampling*."""

from __future__ import annotations

import math
import typing

from .. import nn
from .._sizes import per_axis, size
from ..differentiable import no_derivative
from ..ops import reshape
from ..ops.shapes import shape_of
from .layer import Layer, check_input_shape

__all__ = [
    "Flatten", "Reshape", "UpSampling1D", "UpSampling2D", "UpSampling3D", "ZeroPadding1D",
    "ZeroPadding2D", "ZeroPadding3D",
]


class Flatten(Layer):
    """Keeps the batch axis and flattens the rest: ``(batch, ...) -> (batch, prod(...))``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.layers.Flatten()(s4tf.ones([2, 5, 5, 16])).shape
    (2, 400)
    """

    def __call__(self, input):
        shape = shape_of(input)
        if not shape:
            raise ValueError(
                "Flatten: expected an input of shape (batch, ...), got a scalar of shape (); "
                "it needs a batch axis."
            )
        return reshape(input, (shape[0], math.prod(shape[1:])))


class Reshape(Layer):
    """Reshapes to ``shape``, which includes the batch axis (one entry may be -1), as S4TF.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.layers.Reshape((-1, 4, 4, 1))(s4tf.ones([3, 16])).shape
    (3, 4, 4, 1)
    """

    shape: tuple = no_derivative()

    def __init__(self, shape):
        shape = tuple(size(n, f"shape[{i}]", "Reshape", minimum=-1) for i, n in enumerate(shape))
        if shape.count(-1) > 1 or any(n < -1 or n == 0 for n in shape):
            raise ValueError(
                f"Reshape: shape must be positive ints with at most one -1, got {shape}."
            )
        self.shape = shape

    def __call__(self, input):
        size = math.prod(shape_of(input))
        known = math.prod(n for n in self.shape if n != -1)
        if (-1 in self.shape and size % known) or (-1 not in self.shape and size != known):
            raise ValueError(
                f"Reshape: cannot reshape an input of shape {shape_of(input)} ({size} values) "
                f"to {self.shape}. The target includes the batch axis; use -1 for it."
            )
        return reshape(input, self.shape)


class _ZeroPadding(Layer):
    padding: typing.Any = no_derivative()

    _rank: typing.ClassVar[int] = 0

    def __init__(self, padding=1):
        # Validate with nn's own rule now, so a bad padding fails at construction.
        _validate_padding(padding, self._rank, type(self).__name__)
        self.padding = padding

    def __call__(self, input):
        check_input_shape(self, input, (None,) * (self._rank + 2),
                          f"Inputs are channels-last: (batch, {self._rank} spatial axes, channels).")
        return getattr(nn, f"zero_padding{self._rank}d")(input, padding=self.padding)


def _validate_padding(padding, n, name):
    from ..ops.resampling import zero_padding_pairs

    try:
        zero_padding_pairs(padding, n, name)
    except ValueError as error:
        raise ValueError(str(error)) from None


class ZeroPadding1D(_ZeroPadding):
    """Pads the width axis with zeros: ``padding`` an int or one ``(before, after)`` pair.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.layers.ZeroPadding1D(padding=(1, 2))(s4tf.ones([1, 4, 3])).shape
    (1, 7, 3)
    """

    _rank = 1


class ZeroPadding2D(_ZeroPadding):
    """Pads height and width with zeros: an int, 2 ints, or 2 ``(before, after)`` pairs.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.layers.ZeroPadding2D(padding=((1, 0), (2, 2)))(s4tf.ones([1, 4, 4, 3])).shape
    (1, 5, 8, 3)
    """

    _rank = 2


class ZeroPadding3D(_ZeroPadding):
    """Pads the three spatial axes with zeros.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.layers.ZeroPadding3D(padding=1)(s4tf.ones([1, 2, 2, 2, 1])).shape
    (1, 4, 4, 4, 1)
    """

    _rank = 3


class _UpSampling(Layer):
    size: typing.Any = no_derivative()

    _rank: typing.ClassVar[int] = 0

    def __init__(self, size=2):
        self.size = per_axis(size, self._rank, "size", type(self).__name__)

    def __call__(self, input):
        check_input_shape(self, input, (None,) * (self._rank + 2),
                          f"Inputs are channels-last: (batch, {self._rank} spatial axes, channels).")
        return getattr(nn, f"upsampling{self._rank}d")(input, size=self.size)


class UpSampling1D(_UpSampling):
    """Repeats each step of the width axis ``size`` times (nearest neighbour).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.layers.UpSampling1D(size=3)(s4tf.ones([1, 4, 2])).shape
    (1, 12, 2)
    """

    _rank = 1


class UpSampling2D(_UpSampling):
    """Repeats rows and columns ``size`` times (nearest neighbour).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.layers.UpSampling2D(size=2)(s4tf.ones([1, 3, 3, 2])).shape
    (1, 6, 6, 2)
    """

    _rank = 2


class UpSampling3D(_UpSampling):
    """Repeats each of the three spatial axes ``size`` times.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.layers.UpSampling3D(size=2)(s4tf.ones([1, 2, 2, 2, 1])).shape
    (1, 4, 4, 4, 1)
    """

    _rank = 3
