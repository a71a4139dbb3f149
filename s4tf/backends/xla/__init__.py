"""The lazy tensor backend on JAX/XLA, and its public face ``s4tf.xla``.

This package is what ``s4tf.xla`` names: the lazy backend's counters
(:func:`metrics`, :func:`reset_metrics`) and its warnings. Importing it imports
no JAX; the backend itself (:mod:`.backend`) is imported by
``s4tf.set_backend("xla")`` on first use, and JAX is configured
(:mod:`.jax_settings`) when the backend first needs it.

How the backend works, bottom up (each module imports only those above it in
this list):

* :mod:`.counters`: counters, the recompilation warning, ``S4TF_DEBUG`` output;
* :mod:`.lazy`: :class:`~.lazy.LazyArray`, a pending IR node or a buffer;
* :mod:`.persistent_cache`: the verified on-disk store of compiled programs
  (``S4TF_CACHE_DIR``) and :class:`CacheEntryWarning`; no JAX;
* :mod:`.jax_settings`, :mod:`.nn_kernels`, :mod:`.kernels`: JAX configured
  once, and the JAX kernel table that replays recorded nodes;
* :mod:`.shapes`: memoised ``jax.eval_shape`` for the shapes of new nodes;
* :mod:`.layouts`: what a trace and the compiler read of device layouts;
* :mod:`.compiler`: a pending graph's replay under ``jax.jit``, cached by key;
* :mod:`.graph`: recording, and at a barrier ordering, keys and liveness;
* :mod:`.recording`: the kernel table whose every method records a node;
* :mod:`.sharding`: placing buffers on device meshes;
* :mod:`.backend`: the :class:`~.backend.XLABackend` object;
* :mod:`.capture`: a barrier's trace kept for replay (the backend half of
  ``s4tf.xla.compile``, which lives in :mod:`s4tf.capture` with
  :class:`~s4tf.capture.CaptureMismatchWarning`: they know models and
  optimizers, so ``s4tf/__init__.py`` attaches them to this namespace).
"""

from __future__ import annotations

from .counters import ZERO_METRICS, RecompilationWarning, metrics, reset_metrics
from .persistent_cache import CacheEntryWarning

__all__ = ["ZERO_METRICS", "CacheEntryWarning", "RecompilationWarning", "metrics", "reset_metrics"]
