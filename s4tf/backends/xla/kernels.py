"""The lazy kernel table (records IR nodes) and the JAX kernel table (replays them).

:class:`LazyKernels` answers *any* kernel name with a recorder, so the lazy
backend runs every primitive of :mod:`s4tf.ops` (and ops added later) with no
per-op code. At compile time each node is replayed by calling the kernel of the
same name on :class:`JaxKernels`: the shared :class:`ArrayKernels` over
``jax.numpy``, overridden only where JAX differs (functional scatter with
``.at[].add``) or where precision must be pinned: matmul here and the
convolutions of :mod:`.nn_kernels` run at ``Precision.HIGHEST`` (full float32,
no silent TF32/bf16); a new kernel doing products must pin it the same way.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..array_kernels import ArrayKernels
from . import graph
from .nn_kernels import JaxNNKernels
from .shapes import infer

__all__ = ["JAX_KERNELS", "JaxKernels", "LazyKernels", "freeze"]

_HIGHEST = lax.Precision.HIGHEST
_ATOMS = (int, float, str, bool, type(None), type(Ellipsis), np.dtype)


def freeze(value):
    """A hashable stand-in for a static kernel parameter (slices and lists become tuples)."""
    if isinstance(value, _ATOMS):
        return value
    if isinstance(value, tuple | list):
        return (type(value).__name__, *map(freeze, value))
    if isinstance(value, slice):
        return ("slice", value.start, value.stop, value.step)
    if isinstance(value, np.ndarray):
        return ("array", value.shape, value.dtype.str, value.tobytes())
    if isinstance(value, np.generic):
        return ("scalar", value.dtype.str, value.item())
    try:
        hash(value)
    except TypeError:
        raise TypeError(
            f"The xla backend needs hashable static kernel parameters; got "
            f"{type(value).__name__} ({value!r}). Pass ints, floats, strings, tuples or dtypes."
        ) from None
    return value


class JaxKernels(JaxNNKernels, ArrayKernels):
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

    def matmul(self, x, y):
        # Full float32: no silent TF32/bf16 passes on accelerators.
        return jnp.matmul(x, y, precision=_HIGHEST)

    def with_sharding(self, x, *, sharding):
        # A layout annotation for XLA's SPMD partitioner (s4tf.distributed): an
        # updated parameter keeps its strategy's layout instead of whatever
        # sharding propagation would pick for it.
        return jax.lax.with_sharding_constraint(x, sharding)


def _outside_to_end(indices, n):
    """``indices`` with every value outside ``[0, n)`` moved to ``n`` (out of bounds for JAX)."""
    return jnp.where((indices < 0) | (indices >= n), n, indices)


JAX_KERNELS = JaxKernels()


class LazyKernels:
    """A kernel table whose every method records an IR node instead of computing.

    Examples
    --------
    >>> import numpy as np
    >>> from s4tf.backends.xla.backend import BACKEND
    >>> x = BACKEND.asarray(np.ones((2, 3), np.float32), np.dtype("float32"))
    >>> node = LazyKernels().reduce_sum(x, axis=(1,), keepdims=False)
    >>> node.op, node.shape
    ('reduce_sum', (2,))
    """

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        replay = getattr(JAX_KERNELS, name, None)
        if replay is None:
            raise AttributeError(
                f"The xla backend has no kernel {name!r}: ArrayKernels / NNKernels in "
                "s4tf/backends/ define none. Add it there (written against xp) and every "
                "backend, the lazy one included, gets it."
            )
        record = graph.record

        def recorder(*inputs, **params):
            pkey = tuple(sorted((k, freeze(v)) for k, v in params.items())) if params else ()
            shape, dtype = infer(name, pkey, params, inputs)
            return record(name, inputs, params, pkey, shape, dtype)

        recorder.__name__ = name
        # Cache on the instance: __getattr__ runs once per kernel name.
        setattr(self, name, recorder)
        return recorder

