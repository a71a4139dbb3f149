"""The JAX kernel table: what replays the lazy backend's recorded nodes under ``jax.jit``.

At compile time each node is replayed by calling the kernel of the same name
on :class:`JaxKernels`: the shared :class:`ArrayKernels` over
``jax.numpy``, overridden only where JAX differs (functional scatter with
``.at[].add``) or where precision must be pinned: matmul and dense here and the
convolutions of :mod:`.nn_kernels` run at ``Precision.HIGHEST`` (full float32,
no silent TF32/bf16); a new kernel doing products must pin it the same way.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from ..array_kernels import ArrayKernels
from . import jax_settings  # noqa: F401  (64-bit types before any JAX array exists)
from .nn_kernels import JaxNNKernels
from .norm_kernels import JaxNormKernels

__all__ = ["JAX_KERNELS", "JaxKernels"]

_HIGHEST = lax.Precision.HIGHEST


class JaxKernels(JaxNormKernels, JaxNNKernels, ArrayKernels):
    """:class:`ArrayKernels` over ``jax.numpy``, with JAX's functional updates.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> JaxKernels().index_add(jnp.zeros(3), jnp.ones(1), key=(slice(1, 2),)).tolist()
    [0.0, 1.0, 0.0]
    """

    def __init__(self) -> None:
        super().__init__(jnp)

    def index_add(self, x, updates, *, key):
        return x.at[key].add(updates)

    def gather(self, x, indices, *, axis):
        # Indices are not checked on the lazy backend (that would run the graph), so an
        # index outside [0, n) -- negative ones included, never wrapped -- reads a row of
        # NaN (JAX's fill value: NaN for floats), never a plausible row.
        return jnp.take(x, _outside_to_end(indices, x.shape[axis]), axis=axis, mode="fill")

    def scatter_add(self, x, indices, updates, *, axis):
        # gather's pullback: an out-of-range index's update is dropped, as its row was NaN.
        k = indices.ndim
        target = jnp.moveaxis(x, axis, 0)
        source = jnp.moveaxis(updates, list(range(axis, axis + k)), list(range(k)))
        index = _outside_to_end(indices, target.shape[0])
        return jnp.moveaxis(target.at[index].add(source, mode="drop"), 0, axis)

    def reshape(self, x, *, shape):
        # The op jnp.reshape binds, called directly: jax2onnx (s4tf.export's ONNX) lowers
        # it for a symbolic size (batch * length), which its jnp.reshape rule refuses.
        # Some rules pass -1 (an axis to infer), which only jnp.reshape resolves.
        shape = tuple(shape)
        return jnp.reshape(x, shape) if -1 in shape else lax.reshape(x, shape)

    def matmul(self, x, y):
        # Full float32: no silent TF32/bf16 passes on accelerators.
        return jnp.matmul(x, y, precision=_HIGHEST)

    def dense(self, x, w, b):
        return jnp.matmul(x, w, precision=_HIGHEST) + b

    def with_sharding(self, x, *, sharding):
        # A layout annotation for XLA's SPMD partitioner (s4tf.distributed): an
        # updated parameter keeps its strategy's layout instead of whatever
        # sharding propagation would pick for it.
        return jax.lax.with_sharding_constraint(x, sharding)

    def optimization_barrier(self, x, *after):
        # x, which XLA may neither compute before every value of ``after`` exists nor
        # merge with an equal computation elsewhere (no CSE across the barrier): what
        # s4tf.remat's recomputation starts from, as jax.checkpoint's does.
        return lax.optimization_barrier((x, *after))[0]


def _outside_to_end(indices, n):
    """``indices`` with every value outside ``[0, n)`` moved to ``n`` (out of bounds for JAX)."""
    return jnp.where((indices < 0) | (indices >= n), n, indices)


JAX_KERNELS = JaxKernels()
