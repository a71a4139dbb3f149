"""The lazy XLA backend object: conversions in and out of lazy arrays, and the barrier."""

from __future__ import annotations

import jax
import numpy as np

from ... import hooks
from ..base import Backend
from . import graph, sharding
from .lazy import LazyArray
from .recording import LazyKernels

__all__ = ["BACKEND", "XLABackend"]

def _numpy_dtype(dtype) -> np.dtype:
    if isinstance(dtype, np.dtype):
        return dtype
    return dtype.numpy if hasattr(dtype, "numpy") else np.dtype(dtype)



def _computed(data: LazyArray) -> None:
    """Run ``data``'s pending graph if it has one; refuse a buffer XLA was given."""
    if data.op is not None:
        graph.barrier()
    if data.buffer is None:
        raise RuntimeError(
            "This xla tensor's buffer was donated to XLA at a barrier, which happens only "
            "when no live tensor refers to it; please report how it was reached."
        )

class XLABackend(Backend):
    """Lazy tensors on JAX/XLA: kernels record IR nodes, barriers compile and run them.

    Examples
    --------
    >>> import s4tf
    >>> with s4tf.backend("xla"):
    ...     x = s4tf.Tensor([1.0, 2.0, 3.0])
    ...     y = (x * x).sum()
    >>> y.shape, y.backend          # known without running anything
    ((), 'xla')
    >>> float(y)                    # observing runs the pending graph
    14.0
    """

    name = "xla"
    supports_inplace = False
    lazy = True
    compiles_per_shape = True
    array_type = LazyArray
    xp = None  # no array module: kernels record graph nodes (recording.py)

    def __init__(self) -> None:
        self.kernels = LazyKernels()

    def asarray(self, value, dtype) -> LazyArray:
        # A private copy: the device buffer may be donated later, and on CPU
        # device_put can alias host memory that somebody else still owns.
        host = np.array(value, dtype=_numpy_dtype(dtype), copy=True)
        if host.size == 1:
            array = LazyArray(host.shape, host.dtype, buffer=host, host=True)
        else:
            array = LazyArray(host.shape, host.dtype, buffer=jax.device_put(host))
        if hooks.on_array is not None:  # a captured step's recording follows host values
            hooks.on_array(value, array)
        return array

    def scalar(self, value, dtype) -> LazyArray:
        # A graph parameter of its own (scalar_buffers.py puts it on a device
        # buffer shared by value), hashed by dtype only: a learning rate that
        # changes every step does not change the trace.
        host = np.asarray(value, dtype=_numpy_dtype(dtype))
        array = LazyArray((), host.dtype, buffer=host, host=True)
        if hooks.on_array is not None:  # a captured step's recording follows host values
            hooks.on_array(value, array)
        return array

    def weak_scalar(self, value, numpy_dtype) -> LazyArray:
        # Straight to scalar with the NumPy dtype (the base class goes through an s4tf
        # DType and back): a training step meets dozens of Python numbers. The number
        # is converted in scalar, whose code a captured step's recording knows.
        return self.scalar(value, numpy_dtype)

    def copy(self, data: LazyArray) -> LazyArray:
        # A lazy array is never written in place, so sharing it is as good as a
        # copy; a buffer two tensors hold is never donated.
        return data

    def to_numpy(self, data: LazyArray) -> np.ndarray:
        _computed(data)
        if data.host:
            return data.buffer
        # A copy: a host view of a device buffer would break if XLA reused the buffer.
        return np.array(data.buffer)

    def to_jax(self, data: LazyArray) -> jax.Array:
        # The buffer itself, no copy: a pending value is computed first, and the
        # buffer is marked shared, since whoever holds it now must never see it
        # donated (reused by XLA) at a later barrier.
        _computed(data)
        data.shared = True
        return data.buffer if not data.host else jax.numpy.asarray(data.buffer)

    def from_jax(self, array: jax.Array) -> LazyArray:
        # The caller's buffer, not a copy; shared, so it is never donated under them.
        lazy = LazyArray(tuple(array.shape), array.dtype, buffer=array)
        lazy.shared = True
        return lazy

    def dlpack_source(self, data):
        return self.to_jax(data)

    def devices(self, data: LazyArray) -> tuple:
        return sharding.devices(data)

    def follow_layout(self, data: LazyArray, like: LazyArray) -> LazyArray:
        return sharding.follow_layout(data, like)

    def barrier(self) -> None:
        graph.barrier()


BACKEND = XLABackend()
