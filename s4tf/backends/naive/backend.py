"""The naive backend object: :class:`ArrayModuleBackend` over NumPy, always available.

Its kernels are :class:`~s4tf.backends.naive.kernels.NumPyKernels`: the shared
ones, with a select (``where``) suited to CPUs.

Examples
--------
>>> from s4tf.backends.naive.backend import BACKEND
>>> BACKEND.name, BACKEND.kernels.add(BACKEND.xp.ones(2), BACKEND.xp.ones(2)).tolist()
('naive', [2.0, 2.0])
"""

from __future__ import annotations

import numpy as np

from ..array_module_backend import ArrayModuleBackend
from .kernels import NumPyKernels

__all__ = ["BACKEND"]

BACKEND = ArrayModuleBackend("naive", np, NumPyKernels(np))
