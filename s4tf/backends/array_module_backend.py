"""The eager backend class over a NumPy-compatible array module (NumPy, CuPy).

The naive backend (:mod:`s4tf.backends.naive.backend`) is this class over
NumPy, the cupy backend (:mod:`s4tf.backends.cupy.backend`) a subclass over
CuPy; both run the shared kernels of :mod:`s4tf.backends.array_kernels`.
"""

from __future__ import annotations

import numpy as np

from .array_kernels import ArrayKernels, scatter_add_into
from .base import Backend

__all__ = ["ArrayModuleBackend"]


class ArrayModuleBackend(Backend):
    """An eager backend over a NumPy-compatible array module (NumPy or CuPy).

    The CuPy backend is this class over ``cupy``; its tests run it over NumPy
    standing in, since no machine of this project has a GPU.
    """

    supports_inplace = True

    def __init__(self, name: str, xp, kernels: ArrayKernels | None = None) -> None:
        self.name = name
        self.xp = xp
        self.kernels = kernels or ArrayKernels(xp)
        self.array_type = xp.ndarray

    def asarray(self, value, dtype):
        out = self.xp.array(value, dtype=dtype.numpy if hasattr(dtype, "numpy") else dtype)
        return out

    def copy(self, data):
        return self.xp.array(data, copy=True)

    def to_numpy(self, data):
        if self.xp is np:
            return data
        return self.xp.asnumpy(data)

    def scalar(self, value, dtype):
        return self.xp.asarray(value, dtype=dtype.numpy)

    def weak_scalar(self, value, numpy_dtype):
        # NumPy keeps a float array's dtype when a Python number meets it (weak scalar).
        return value

    def owns_storage(self, data) -> bool:
        """An array of this module's own type, not a view, owning writable memory.

        NumPy and CuPy both keep ``base`` and ``flags.owndata``; CuPy's arrays are
        always writable, so its flags have no ``writeable``.

        Examples
        --------
        >>> import numpy as np
        >>> from s4tf.backends.naive.backend import BACKEND
        >>> a = np.zeros(4)
        >>> BACKEND.owns_storage(a), BACKEND.owns_storage(a[1:])
        (True, False)
        """
        return (type(data) is self.array_type and data.base is None and data.flags.owndata
                and getattr(data.flags, "writeable", True))

    def dlpack_source(self, data):
        return data

    def add_inplace(self, dst, src):
        self.xp.add(dst, src, out=dst)

    def index_add_inplace(self, dst, index, src, axis=None):
        if axis is None:
            dst[index] += src
            return
        scatter_add_into(self.xp, dst, index, src, axis)

