"""The recording kernel table: every kernel call of the lazy backend records an IR node.

:class:`LazyKernels` answers *any* kernel name with a recorder, so the lazy
backend runs every primitive of :mod:`s4tf.ops` (and ops added later) with no
per-op code: a name is valid when :data:`~.kernels.JAX_KERNELS` (which replays
the node) has it; the new node's shape and dtype come from :mod:`.shapes`.
"""

from __future__ import annotations

import numpy as np

from ...dtypes import DType
from . import graph
from .kernels import JAX_KERNELS
from .shapes import infer

__all__ = ["LazyKernels", "freeze", "param_key"]

_ATOMS = (int, float, str, bool, type(None), type(Ellipsis), np.dtype)
# Values a parameter key may hold as they are, by exact type: a NumPy scalar
# (np.float64 subclasses float) goes through freeze() and so keys apart.
_PLAIN = frozenset((int, float, str, bool, type(None), type(Ellipsis), DType))
_interned: dict = {}
# Kernels whose result is their input when its shape and dtype come out unchanged.
_UNCHANGED_WHEN_SAME = frozenset(("cast", "reshape", "broadcast_to"))


def freeze(value):
    """A hashable stand-in for a static kernel parameter (slices and lists become tuples)."""
    if isinstance(value, np.generic):
        # Before the atoms: np.float64 is a float, yet JAX promotes it apart from a
        # Python float, and it compares equal to one (and to an array with a tuple).
        return ("scalar", value.dtype.str, value.item())
    if isinstance(value, _ATOMS):
        return value
    if isinstance(value, tuple | list):
        return (type(value).__name__, *map(freeze, value))
    if isinstance(value, slice):
        return ("slice", value.start, value.stop, value.step)
    if isinstance(value, np.ndarray):
        return ("array", value.shape, value.dtype.str, value.tobytes())
    try:
        hash(value)
    except TypeError:
        raise TypeError(
            f"The xla backend needs hashable static kernel parameters; got "
            f"{type(value).__name__} ({value!r}). Pass ints, floats, strings, tuples or dtypes."
        ) from None
    return value


def _plain(value) -> bool:
    """Whether ``value`` may stand in a parameter key as it is (atoms, nested int tuples)."""
    kind = type(value)
    if kind in _PLAIN:
        return True
    if kind is tuple:
        for item in value:
            if type(item) is not int and not (type(item) is tuple and _plain(item)):
                return False
        return True
    return isinstance(value, np.dtype)


def param_key(params: dict) -> tuple:
    """``(key, params)``: the hashable key of a kernel call's static ``params``, shared.

    Plain parameters (ints, floats, strings, dtypes, tuples of ints) key as
    ``params.items()``; anything else goes through :func:`freeze`, tagged, so
    the two forms never meet. Keys are interned with the first ``params`` dict
    that had them: the thousands of nodes of a training step share a few
    hundred key and dict objects instead of each keeping its own (fewer objects
    for the cycle collector to walk). Equal keys mean equal parameters, so any
    of those dicts replays the same.

    Examples
    --------
    >>> from s4tf.backends.xla.recording import param_key
    >>> key, params = param_key({"axis": (1,), "keepdims": False})
    >>> key, param_key({"axis": (1,), "keepdims": False})[0] is key
    ((('axis', (1,)), ('keepdims', False)), True)
    """
    for value in params.values():
        if not _plain(value):
            key = ("frozen", *sorted((k, freeze(v)) for k, v in params.items()))
            break
    else:
        key = tuple(params.items())
    return _interned.setdefault(key, (key, params))


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

        if name in _UNCHANGED_WHEN_SAME:
            def recorder(x, **params):
                # A cast to the dtype it has, a reshape or broadcast to the shape it
                # has: the value itself (lazy values are never written), no node.
                pkey, params = param_key(params)
                shape, dtype = infer(name, pkey, params, (x,))
                if shape == x.shape and dtype == x.dtype:
                    return x
                return record(name, (x,), params, pkey, shape, dtype)
        else:
            def recorder(*inputs, **params):
                pkey, params = param_key(params) if params else ((), params)
                shape, dtype = infer(name, pkey, params, inputs)
                return record(name, inputs, params, pkey, shape, dtype)

        recorder.__name__ = name
        # Cache on the instance: __getattr__ runs once per kernel name.
        setattr(self, name, recorder)
        return recorder

