"""Differentiable values: frozen dataclasses with synthesized tangent vectors.

``base`` holds the base classes (:class:`Differentiable` and the tangent
vectors' :class:`TangentVectorBase`), ``fields`` what a field may be and when
it may be set, ``state`` the mutable :class:`State` cell,
``tangent_arithmetic`` the vector-space operations of tangents, ``moving``
the :func:`moved` entry point, and ``jax_pytrees`` the hook that registers
every class with JAX once JAX is imported.
"""

from __future__ import annotations

from .base import Differentiable, TangentVectorBase, replace
from .fields import no_derivative
from .moving import moved
from .state import State

__all__ = ["Differentiable", "State", "TangentVectorBase", "moved", "no_derivative", "replace"]
