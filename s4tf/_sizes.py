"""The one validator of sizes: shapes, feature counts, window sizes, strides.

Creation functions, random draws, initializers and every layer constructor
that takes sizes check them here, at construction, so ``Dense(3.5, 4)`` or
``s4tf.zeros([-1, 2])`` fails at once with an error naming the argument,
instead of being truncated or failing later inside a kernel. A size is an int
(NumPy ints and 0-d int tensors too); floats, strings and bools are not.
"""

from __future__ import annotations

import numbers
import operator

import numpy as np

__all__ = ["as_int", "per_axis", "shape", "size", "sizes"]


def as_int(value):
    """``value`` as an int, or None when it is not an integer (bools are not sizes)."""
    if isinstance(value, bool | np.bool_):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real | str | bytes) or value is None:
        return None
    try:
        return operator.index(value)  # 0-d int tensors, other integer types
    except TypeError:
        return None


def _why(value) -> str:
    if isinstance(value, bool | np.bool_):
        return " (a bool; booleans are not sizes)"
    if isinstance(value, numbers.Real):
        return " (a float; a size counts elements: pass a whole number, e.g. int(...))"
    return f" (a {type(value).__name__})"


def _kind(minimum: int) -> str:
    if minimum == 1:
        return "a positive int"
    if minimum == 0:
        return "a non-negative int"
    return f"an int >= {minimum}"


def size(value, argument: str, owner: str, minimum: int = 1) -> int:
    """``value`` checked as one size ``>= minimum``; ``ValueError`` naming ``argument``.

    Examples
    --------
    >>> from s4tf._sizes import size
    >>> size(3, "input_size", "Dense")
    3
    >>> size(3.5, "input_size", "Dense")
    Traceback (most recent call last):
    ...
    ValueError: Dense: input_size must be a positive int, got 3.5 (a float; a size counts elements: pass a whole number, e.g. int(...)).
    """
    n = as_int(value)
    if n is None:
        raise ValueError(f"{owner}: {argument} must be {_kind(minimum)}, got {value!r}{_why(value)}.")
    if n < minimum:
        raise ValueError(f"{owner}: {argument} must be {_kind(minimum)}, got {n}.")
    return n


def sizes(owner: str, minimum: int = 1, **values) -> tuple[int, ...]:
    """Each keyword checked with :func:`size`, in order; their ints.

    Examples
    --------
    >>> from s4tf._sizes import sizes
    >>> sizes("Dense", input_size=3, output_size=4)
    (3, 4)
    """
    return tuple(size(value, name, owner, minimum) for name, value in values.items())


def shape(value, owner: str, argument: str = "shape") -> tuple[int, ...]:
    """A tensor shape: an int or a sequence of non-negative ints.

    Examples
    --------
    >>> from s4tf._sizes import shape
    >>> shape([2, 3], "zeros")
    (2, 3)
    >>> shape([-1, 2], "zeros")
    Traceback (most recent call last):
    ...
    ValueError: zeros: shape[0] must be a non-negative int, got -1.
    """
    if as_int(value) is not None:
        return (size(value, argument, owner, 0),)
    try:
        items = tuple(value)
    except TypeError:
        raise ValueError(
            f"{owner}: {argument} must be an int or a sequence of ints, got {value!r}."
        ) from None
    return tuple(size(n, f"{argument}[{i}]", owner, 0) for i, n in enumerate(items))


def per_axis(value, n: int, argument: str, owner: str, minimum: int = 1) -> tuple[int, ...]:
    """An int or ``n`` ints (one per spatial axis), each ``>= minimum``, as ``n`` ints.

    Examples
    --------
    >>> from s4tf._sizes import per_axis
    >>> per_axis(2, 3, "strides", "Conv3D")
    (2, 2, 2)
    """
    single = as_int(value)
    if single is not None:
        items = (value,) * n
    else:
        try:
            items = tuple(value)
        except TypeError:
            items = ()
    ints = tuple(as_int(v) for v in items)
    if len(ints) != n or any(v is None or v < minimum for v in ints):
        plural = "positive ints" if minimum == 1 else f"ints >= {minimum}"
        raise ValueError(
            f"{owner}: {argument} must be {_kind(minimum)} or {n} {plural} (one per spatial "
            f"axis), got {value!r}."
        )
    return ints
