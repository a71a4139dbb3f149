"""The eager CuPy backend: the shared array kernels on the GPU.

It is :class:`~s4tf.backends.naive.ArrayModuleBackend` over ``cupy``, with
CuPy's own scatter-add. Machines without a GPU can test it with NumPy standing
in for CuPy: set ``S4TF_CUPY_STANDIN=numpy`` before the backend is first used
(the test suite does). The stand-in is a separate backend object, so mixing it
with naive tensors still raises the two-backends error, as on a real GPU.
"""

from __future__ import annotations

import os
import types

import numpy as np

from .array_kernels import ArrayKernels
from .naive import ArrayModuleBackend

__all__ = ["BACKEND", "CuPyKernels"]


def _numpy_standin() -> types.ModuleType:
    """A module that looks like ``cupy`` (``asnumpy`` included) but is NumPy."""
    standin = types.ModuleType("cupy_numpy_standin")
    standin.__dict__.update({k: getattr(np, k) for k in dir(np) if not k.startswith("__")})
    standin.asnumpy = lambda array: np.asarray(array)
    standin.is_standin = True
    return standin


def _scatter_add_function(xp):
    if getattr(xp, "is_standin", False):
        return lambda target, indices, source: np.add.at(target, indices, source)
    import cupyx

    return cupyx.scatter_add


class CuPyKernels(ArrayKernels):
    """:class:`ArrayKernels` over CuPy, with ``cupyx.scatter_add`` for repeated indices.

    Examples
    --------
    >>> import numpy as np
    >>> kernels = CuPyKernels(_numpy_standin())
    >>> kernels.scatter_add(np.zeros(3), np.array([1, 1]), np.ones(2), axis=0).tolist()
    [0.0, 2.0, 0.0]
    """

    def __init__(self, xp) -> None:
        super().__init__(xp)
        self._scatter_add = _scatter_add_function(xp)

    def scatter_add(self, x, indices, updates, *, axis):
        out = self.xp.array(x, copy=True)
        self.scatter_add_into(out, indices, updates, axis)
        return out

    def scatter_add_into(self, out, indices, updates, axis):
        xp, k = self.xp, indices.ndim
        target = xp.moveaxis(out, axis, 0)
        source = xp.moveaxis(updates, list(range(axis, axis + k)), list(range(k)))
        self._scatter_add(target, indices, source)


class _CuPyBackend(ArrayModuleBackend):
    def devices(self, data) -> tuple:
        device = getattr(data, "device", None)  # a cupy.cuda.Device; "cpu" on the stand-in
        return (f"cuda:{device.id}",) if hasattr(device, "id") else ("cpu",)

    def index_add_inplace(self, dst, index, src, axis=None):
        if axis is None:
            dst[index] += src
            return
        self.kernels.scatter_add_into(dst, index, src, axis)


def _array_module():
    if os.environ.get("S4TF_CUPY_STANDIN", "").strip().lower() == "numpy":
        return _numpy_standin()
    import cupy  # ImportError here becomes "pip install 's4tf[cuda]'" in base.py

    return cupy


_xp = _array_module()
BACKEND = _CuPyBackend("cupy", _xp, CuPyKernels(_xp))
