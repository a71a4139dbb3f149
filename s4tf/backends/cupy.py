"""The eager CuPy backend: the shared array kernels on the GPU.

It is :class:`~s4tf.backends.naive.ArrayModuleBackend` over ``cupy``, with
CuPy's own scatter-add. Machines without a GPU can test it with NumPy standing
in for CuPy: set ``S4TF_CUPY_STANDIN=numpy`` before the backend is first used
(the test suite does). The stand-in (:mod:`s4tf.backends.cupy_standin`) has an
array type of its own that refuses implicit host conversion and host arrays in
device functions, as CuPy does, so a kernel that calls ``np`` instead of ``xp``
or allocates on the host fails here as it would on a GPU. It is a separate
backend object, so mixing it with naive tensors still raises the two-backends
error, as on a real GPU.
"""

from __future__ import annotations

import os

from .array_kernels import ArrayKernels
from .naive import ArrayModuleBackend

__all__ = ["BACKEND", "CuPyKernels"]


def _scatter_add_function(xp):
    if getattr(xp, "is_standin", False):
        return xp.scatter_add
    import cupyx

    return cupyx.scatter_add


class CuPyKernels(ArrayKernels):
    """:class:`ArrayKernels` over CuPy, with ``cupyx.scatter_add`` for repeated indices.

    Examples
    --------
    >>> from s4tf.backends import cupy_standin as xp
    >>> kernels = CuPyKernels(xp)
    >>> out = kernels.scatter_add(xp.zeros(3), xp.asarray([1, 1]), xp.ones(2), axis=0)
    >>> out.get().tolist()
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
        from . import cupy_standin

        return cupy_standin
    import cupy  # ImportError here becomes "pip install 's4tf[cuda]'" in base.py

    return cupy


_xp = _array_module()
BACKEND = _CuPyBackend("cupy", _xp, CuPyKernels(_xp))
