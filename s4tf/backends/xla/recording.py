"""The recording kernel table: every kernel call of the lazy backend records an IR node.

:class:`LazyKernels` answers *any* kernel name with a recorder, so the lazy
backend runs every primitive of :mod:`s4tf.ops` (and ops added later) with no
per-op code: a name is valid when :data:`~.kernels.JAX_KERNELS` (which replays
the node) has it; the new node's shape and dtype come from :mod:`.shapes`.
"""

from __future__ import annotations

import numpy as np

from . import graph
from .kernels import JAX_KERNELS
from .shapes import infer

__all__ = ["LazyKernels", "freeze"]

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

