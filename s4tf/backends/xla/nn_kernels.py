"""Convolution and pooling kernels for the XLA replay, on ``jax.lax``.

The shared :class:`~s4tf.backends.nn_kernels.NNKernels` build convolutions from
NumPy strided views and write pools' transposes into scratch buffers, which
``jax.numpy`` cannot do. Here each is one XLA op (``conv_general_dilated``,
``reduce_window``), and each transpose is JAX's transpose of the forward
kernel, so the same keyword conventions hold (channels-last, HWIO filters,
``padding`` as ``(before, after)`` pairs per spatial axis).

A pointwise convolution (every window size 1, no padding, one group) is a
matrix product over the channels of the (strided) pixels, and runs as
``dot_general`` instead: on the 1x1 shapes of ResNet-56 and MobileNetV2
measured, XLA's CPU dot took 0.21-0.73 of its convolution's time for the
filter gradient, 0.47-1.07 for the forward pass and 0.27-0.85 for the input
gradient but on one shape (HOW_IT_WORKS.md, "The lazy backend"). A
convolution's filter gradient transposes both operands to put the batch axis
innermost; the dot contracts batch and pixels where they are.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

__all__ = ["JaxNNKernels"]

_HIGHEST = lax.Precision.HIGHEST
_SPATIAL = "DHW"


def _dimension_numbers(rank: int):
    spatial = _SPATIAL[3 - (rank - 2):]
    return ("N" + spatial + "C", spatial + "IO", "N" + spatial + "C")


def _pointwise(filter_shape, padding, groups) -> bool:
    """True for a convolution that is a matrix product per pixel (window 1, unpadded, one group).

    Dilation does nothing to a window of size 1, so any dilation qualifies.
    """
    return (groups == 1 and all(size == 1 for size in filter_shape[:-2])
            and all(before == 0 and after == 0 for before, after in padding))


def _matrix(w):
    """The ``(in, out)`` matrix of a pointwise filter (spatial axes of size 1 dropped)."""
    return w.reshape(w.shape[-2:])


def _strided_pixels(x, strides):
    """The pixels a pointwise convolution with ``strides`` reads (every stride-th, from 0)."""
    if all(step == 1 for step in strides):
        return x
    limits = (x.shape[0], *((size - 1) // step * step + 1
                            for size, step in zip(x.shape[1:-1], strides, strict=True)),
              x.shape[-1])
    return lax.slice(x, (0,) * x.ndim, limits, (1, *strides, 1))


def _spread(pixels, input_shape, strides):
    """Place the strided pixels' values back at their places in ``input_shape``, zeros elsewhere.

    The transpose of :func:`_strided_pixels`: interior padding puts stride - 1
    zeros between pixels, and the pixels a stride skipped at the end are zeros.
    """
    if all(step == 1 for step in strides):
        return pixels
    spatial = [(0, size - ((count - 1) * step + 1), step - 1)
               for size, count, step in zip(input_shape[1:-1], pixels.shape[1:-1], strides,
                                                   strict=True)]
    return lax.pad(pixels, np.array(0, pixels.dtype), [(0, 0, 0), *spatial, (0, 0, 0)])


def _window(rank, window, strides, padding):
    return (1, *window, 1), (1, *strides, 1), ((0, 0), *padding, (0, 0))


class JaxNNKernels:
    """NN kernels as single XLA ops; a mixin placed before ``ArrayKernels``.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from s4tf.backends.xla.kernels import JAX_KERNELS
    >>> JAX_KERNELS.window_sum(jnp.ones((1, 4, 4, 1)), window=(2, 2), strides=(2, 2),
    ...                        padding=((0, 0), (0, 0))).shape
    (1, 2, 2, 1)
    """

    def conv(self, x, w, *, strides, padding, dilations, groups):
        if _pointwise(w.shape, padding, groups):
            return lax.dot_general(_strided_pixels(x, strides), _matrix(w),
                                   (((x.ndim - 1,), (0,)), ((), ())), precision=_HIGHEST)
        return lax.conv_general_dilated(
            x, w, window_strides=tuple(strides), padding=tuple(map(tuple, padding)),
            rhs_dilation=tuple(dilations), dimension_numbers=_dimension_numbers(x.ndim),
            feature_group_count=groups, precision=_HIGHEST,
        )

    def conv_backprop_input(self, g, w, *, input_shape, strides, padding, dilations, groups):
        if _pointwise(w.shape, padding, groups):
            pixels = lax.dot_general(g, _matrix(w), (((g.ndim - 1,), (1,)), ((), ())),
                                     precision=_HIGHEST)
            return _spread(pixels, input_shape, strides)

        def forward(x):
            return self.conv(x, w, strides=strides, padding=padding, dilations=dilations,
                             groups=groups)

        return jax.linear_transpose(forward, jax.ShapeDtypeStruct(input_shape, g.dtype))(g)[0]

    def conv_backprop_filter(self, x, g, *, filter_shape, strides, padding, dilations, groups):
        if _pointwise(filter_shape, padding, groups):
            axes = tuple(range(x.ndim - 1))  # batch and pixels, contracted in place
            matrix = lax.dot_general(_strided_pixels(x, strides), g, ((axes, axes), ((), ())),
                                     precision=_HIGHEST)
            return matrix.reshape(filter_shape)

        def forward(w):
            return self.conv(x, w, strides=strides, padding=padding, dilations=dilations,
                             groups=groups)

        return jax.linear_transpose(forward, jax.ShapeDtypeStruct(filter_shape, g.dtype))(g)[0]

    def max_pool(self, x, *, window, strides, padding):
        dims, steps, pads = _window(x.ndim, window, strides, padding)
        # bfloat16 has NumPy kind "V" (ml_dtypes), so ask JAX whether it is floating.
        lowest = -jnp.inf if jnp.issubdtype(x.dtype, jnp.floating) else jnp.iinfo(x.dtype).min
        return lax.reduce_window(x, np.array(lowest, x.dtype), lax.max, dims, steps, pads)

    def max_pool_scatter(self, x, g, *, window, strides, padding):
        # The transpose of max_pool_select in v (linear): the same first-maximum ties.
        def select(v):
            return self.max_pool_select(x, v, window=window, strides=strides, padding=padding)

        return jax.linear_transpose(select, jax.ShapeDtypeStruct(x.shape, g.dtype))(g)[0]

    def window_sum(self, x, *, window, strides, padding):
        dims, steps, pads = _window(x.ndim, window, strides, padding)
        return lax.reduce_window(x, np.array(0, x.dtype), lax.add, dims, steps, pads)

    def window_sum_transpose(self, g, *, input_shape, window, strides, padding):
        def forward(x):
            return self.window_sum(x, window=window, strides=strides, padding=padding)

        return jax.linear_transpose(forward, jax.ShapeDtypeStruct(input_shape, g.dtype))(g)[0]
