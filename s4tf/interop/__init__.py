"""Interoperability: s4tf values in JAX, optax and other array libraries, and back.

* :mod:`.jax_bridge`: :func:`to_jax` / :func:`from_jax` (no copy on the xla
  and jax backends) and :func:`as_jax_function` (an s4tf function as a pure
  JAX function of flat arrays, which ``s4tf.export`` builds on). Models and
  tensors are JAX pytrees (:mod:`s4tf.differentiable.jax_pytrees`), so
  ``jax.jit``, ``jax.grad``, ``jax.vmap`` and ``jax.lax.scan`` take them, and
  s4tf ops on JAX tracers run on the ``jax`` backend.
* :mod:`.dlpack`: :func:`from_dlpack` (``Tensor.__dlpack__`` is the other way).

The guide is ``docs/guides/jax-interop.md``; the machinery is described in
``s4tf/HOW_IT_WORKS.md`` ("Interop").
"""

from .dlpack import from_dlpack
from .jax_bridge import JaxFunctionTree, as_jax_function, from_jax, jax_backend, to_jax

__all__ = ["JaxFunctionTree", "from_dlpack", "as_jax_function", "from_jax", "jax_backend", "to_jax"]
