"""The cupy backend object: :class:`ArrayModuleBackend` over ``cupy`` (or its stand-in).

``S4TF_CUPY_STANDIN=numpy``, read when this module is first imported, runs it
over :mod:`s4tf.backends.cupy.standin` instead of CuPy (see the package's
docstring).
"""

from __future__ import annotations

import os

from ..array_module_backend import ArrayModuleBackend
from .kernels import CuPyKernels

__all__ = ["BACKEND"]


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
        from . import standin

        return standin
    import cupy  # ImportError here becomes "pip install 's4tf[cuda]'" in base.py

    return cupy


_xp = _array_module()
BACKEND = _CuPyBackend("cupy", _xp, CuPyKernels(_xp))
