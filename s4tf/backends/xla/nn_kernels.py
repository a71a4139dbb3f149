"""Convolution and pooling kernels for the XLA replay, on ``jax.lax``.

The shared :class:`~s4tf.backends.nn_kernels.NNKernels` build convolutions from
NumPy strided views and write pools' transposes into scratch buffers, which
``jax.numpy`` cannot do. Here each is one XLA op (``conv_general_dilated``,
``reduce_window``), and each transpose is JAX's transpose of the forward
kernel, so the same keyword conventions hold (channels-last, HWIO filters,
``padding`` as ``(before, after)`` pairs per spatial axis).
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
        return lax.conv_general_dilated(
            x, w, window_strides=tuple(strides), padding=tuple(map(tuple, padding)),
            rhs_dilation=tuple(dilations), dimension_numbers=_dimension_numbers(x.ndim),
            feature_group_count=groups, precision=_HIGHEST,
        )

    def conv_backprop_input(self, g, w, *, input_shape, strides, padding, dilations, groups):
        def forward(x):
            return self.conv(x, w, strides=strides, padding=padding, dilations=dilations,
                             groups=groups)

        return jax.linear_transpose(forward, jax.ShapeDtypeStruct(input_shape, g.dtype))(g)[0]

    def conv_backprop_filter(self, x, g, *, filter_shape, strides, padding, dilations, groups):
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
