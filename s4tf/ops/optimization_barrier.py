"""The optimization barrier: a value XLA may not compute early nor merge with its twin.

:func:`s4tf.remat` recomputes a function's intermediates in the backward pass.
On the lazy backend that recomputation is recorded next to the forward pass it
repeats, and common-subexpression elimination (s4tf's graph and XLA's alike)
would merge the two, keeping every intermediate alive again. So the
recomputation starts from ``optimization_barrier(x, *after)``: ``x`` itself, but
a value neither can see through, which XLA may not compute before every value of
``after`` (the cotangents that start the backward pass) exists. This is how
``jax.checkpoint`` keeps its recomputation (``lax.optimization_barrier``).
Eager backends run in program order, so there the op returns ``x``.

It is not part of the public op set (``s4tf.ops.__all__``): only the remat
machinery calls it. It differentiates as the identity in ``x`` (``after`` only
orders the computation, so it gets no derivative) and batches as ``x`` is
batched, so recomputations nest for higher order and under ``vmap``.
"""

from __future__ import annotations

from .primitive import EachArgument, primitive

__all__ = ["optimization_barrier"]


def _first_only(i, v, x, *after, out):
    """The identity's rule for ``x`` (position 0); ``after`` has no derivative."""
    return v if i == 0 else None


def _batch(args, dims):
    """Under vmap: the barrier of the unwrapped values; the batch stays where ``x`` has it."""
    return optimization_barrier(*args), dims[0]


optimization_barrier = primitive(
    "optimization_barrier",
    vjp=EachArgument(_first_only),
    jvp=EachArgument(_first_only),
    batch=_batch,
    signature="x, *after",
    doc="""``x``, kept apart: XLA may neither compute it before every value of ``after``
nor merge it with an equal computation (``jax.lax.optimization_barrier``).

Eager backends return ``x``. :func:`s4tf.remat` starts its recomputation from it
on the lazy backend.

Examples
--------
>>> import s4tf
>>> from s4tf.ops.optimization_barrier import optimization_barrier
>>> optimization_barrier(s4tf.Tensor([1.0, 2.0]), s4tf.Tensor(3.0)).tolist()
[1.0, 2.0]
>>> s4tf.gradient(s4tf.Tensor([1.0, 2.0]),
...               of=lambda x: (optimization_barrier(x) * x).sum()).tolist()
[2.0, 4.0]
""",
)
