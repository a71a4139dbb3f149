"""The lazy array: one value of the XLA backend, pending or materialised.

A :class:`LazyArray` is what an xla :class:`s4tf.Tensor` holds as its storage.
It is either

* *pending*: an IR node ``(op, inputs, static params, shape, dtype)`` recorded
  by a kernel call and not yet computed, or
* *materialised*: a parameter of the next graph, holding a JAX device buffer
  (``host=False``) or a small host NumPy value (``host=True``: Python scalars
  entering ops, hashed by shape and dtype only, so a learning rate that changes
  every step never forces a recompile).

Shapes and dtypes are known without running anything, so ``t.shape`` never
executes the graph. A barrier turns pending nodes into materialised ones in
place (``op`` becomes None and the inputs are dropped), so every Tensor that
holds the node sees the computed value.
"""

from __future__ import annotations

import numpy as np

__all__ = ["LazyArray"]


class LazyArray:
    """A pending IR node or a materialised buffer of the lazy backend.

    Attributes
    ----------
    op : str or None
        The kernel name of a pending node; None once materialised.
    inputs : tuple
        Input ``LazyArray`` values (or None) of a pending node; empty otherwise.
    params : dict or None
        The kernel's static keyword parameters (replayed as given).
    pkey : tuple or None
        ``params`` made hashable (slices become tuples), for the trace hash.
    shape : tuple of int
    dtype : numpy.dtype
    buffer : jax.Array, numpy.ndarray or None
        The value once materialised.
    host : bool
        Whether ``buffer`` is a small host value packed into the graph's inputs.
    shared : bool
        Whether another array may hold the same device buffer (never donated).
    mark, slot, uses : int
        The graph's bookkeeping while a barrier builds a trace: the barrier that
        numbered this array, its value's number and how many nodes use it.

    Examples
    --------
    >>> import s4tf
    >>> t = s4tf.Tensor([1.0, 2.0]).to("xla") * 2
    >>> t._data.shape, t._data.is_pending
    ((2,), True)
    >>> t.tolist()
    [2.0, 4.0]
    """

    __slots__ = (
        "op", "inputs", "params", "pkey", "shape", "dtype", "buffer", "host", "shared", "mark",
        "slot", "uses", "__weakref__",
    )

    # Positional parameters: the graph makes thousands of nodes per training step,
    # and a positional call is the cheapest.
    def __init__(self, shape, dtype, buffer=None, host=False, op=None, inputs=(), params=None,
                 pkey=None) -> None:
        self.op = op
        self.inputs = inputs
        self.params = params
        self.pkey = pkey
        self.shape = shape
        self.dtype = dtype
        self.buffer = buffer
        self.host = host
        self.shared = False
        self.mark = 0

    @property
    def is_pending(self) -> bool:
        """True while this node waits for a barrier or an observation."""
        return self.op is not None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        size = 1
        for n in self.shape:
            size *= n
        return size

    def materialize(self, buffer) -> None:
        """Replace this pending node by its computed ``buffer``, dropping the graph."""
        self.buffer = buffer
        self.op = None
        self.inputs = ()
        self.params = None
        self.pkey = None

    def __repr__(self) -> str:
        state = f"pending {self.op}" if self.op is not None else ("host" if self.host else "device")
        return f"<LazyArray {state} shape={self.shape} dtype={np.dtype(self.dtype).name}>"
