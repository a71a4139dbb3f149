"""The lazy tensor backend on JAX/XLA (``s4tf.set_backend("xla")``).

Kernels record IR nodes (:mod:`.kernels`, :mod:`.lazy`); shapes come from
memoised ``jax.eval_shape`` (:mod:`.shapes`); a barrier or an observation
collects every live pending array, hashes the graph (:mod:`.graph`), and runs a
cached ``jax.jit`` executable with buffer donation (:mod:`.compiler`).
Counters live in :mod:`.metrics` and are public as :func:`s4tf.xla.metrics`.

Importing this package turns on ``jax_enable_x64`` so that float64 tensors stay
float64 (as on the other backends); s4tf always passes explicit dtypes.
"""

from __future__ import annotations

import jax

jax.config.update("jax_enable_x64", True)

from .backend import BACKEND, XLABackend  # noqa: E402  (after the x64 switch)

__all__ = ["BACKEND", "XLABackend"]
