"""JAX as the lazy backend needs it, set once, when the backend first imports JAX.

64-bit types are turned on (``jax_enable_x64``) so that float64 tensors stay
float64, as on the other backends; s4tf always passes explicit dtypes, so
nothing else changes width. Every module of this package that imports JAX
imports this one first.
"""

from __future__ import annotations

import jax

__all__ = []

jax.config.update("jax_enable_x64", True)
