"""The jax backend's kernel table: the lazy backend's JAX replay kernels, called eagerly.

The xla backend records a node per kernel call and replays it later with
:data:`~s4tf.backends.xla.kernels.JAX_KERNELS` under ``jax.jit``; the jax
backend calls that same table at once, on ``jax.Array`` values or on the
tracers of a JAX transformation. One table, so the two backends compute the
same numbers (full float32 matmuls and convolutions, NaN rows for
out-of-range indices).
"""

from __future__ import annotations

from ..xla.kernels import JAX_KERNELS, JaxKernels

__all__ = ["JAX_KERNELS", "JaxKernels"]
