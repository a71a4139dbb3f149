"""Shapes and dtypes of lazy nodes without running them: memoised ``jax.eval_shape``.

An unmemoised ``jax.eval_shape`` costs more than a training step's worth of
kernels, so results are cached by ``(op, static params, input shapes/dtypes)``;
after the first step every op's shape is one dictionary lookup.
"""

from __future__ import annotations

import jax

from .kernels import JAX_KERNELS

__all__ = ["infer", "clear"]

_cache: dict = {}


def infer(op: str, pkey, params: dict, inputs) -> tuple:
    """``(shape, dtype)`` of kernel ``op`` applied to ``inputs`` with ``params``."""
    # Unary and binary kernels (most of a step) key flat, without a generator.
    if len(inputs) == 1 and inputs[0] is not None:
        x = inputs[0]
        signature = (op, pkey, x.shape, x.dtype)
    elif len(inputs) == 2 and inputs[0] is not None and inputs[1] is not None:
        x, y = inputs
        signature = (op, pkey, x.shape, x.dtype, y.shape, y.dtype)
    else:
        signature = (op, pkey, tuple(None if x is None else (x.shape, x.dtype) for x in inputs))
    found = _cache.get(signature)
    if found is None:
        found = _cache[signature] = _evaluate(op, params, inputs)
    return found


def _evaluate(op, params, inputs):
    kernel = getattr(JAX_KERNELS, op)
    present = [i for i, x in enumerate(inputs) if x is not None]
    structs = [jax.ShapeDtypeStruct(inputs[i].shape, inputs[i].dtype) for i in present]

    def apply(*arrays):
        args = [None] * len(inputs)
        for i, array in zip(present, arrays, strict=True):
            args[i] = array
        return kernel(*args, **params)

    out = jax.eval_shape(apply, *structs)
    if not hasattr(out, "shape"):
        raise TypeError(f"kernel {op!r} returned {type(out).__name__}, not one array")
    return tuple(out.shape), out.dtype


def clear() -> None:
    """Forget memoised shapes (tests)."""
    _cache.clear()
