"""Neural-network kernels (convolution, pooling) over an array namespace ``xp``.

A mixin of :class:`s4tf.backends.array_kernels.ArrayKernels`: methods are named
after the primitives of :mod:`s4tf.ops` that use them and, like every kernel,
never write into their inputs.
"""

from __future__ import annotations


class NNKernels:
    """Convolution and pooling kernels (filled in by the layers work)."""
