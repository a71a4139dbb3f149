"""Matrix products."""

from __future__ import annotations

from .primitive import primitive
from .shapes import _transpose, expand_dims, shape_of, squeeze

__all__ = ["matmul"]


def _swap(x):
    """``x`` with its last two axes swapped (a matrix's transpose, batched)."""
    rank = len(shape_of(x))
    perm = _SWAPS.get(rank) or tuple(range(rank - 2)) + (rank - 1, rank - 2)
    return _transpose(x, perm=perm)


_SWAPS = {2: (1, 0), 3: (0, 2, 1)}  # the common ranks' permutations, built once


def _describe(args, error):
    a, b = (shape_of(x) for x in args)
    return (
        f"matmul: shapes {a} and {b} do not fit: the last axis of the first ({a[-1] if a else '-'}) "
        f"must equal the second-to-last axis of the second ({b[-2] if len(b) > 1 else '-'}), and "
        "leading (batch) axes must broadcast. Transpose an operand (t.T) if you meant that."
    )


matmul_ = primitive(
    "matmul",
    promote=True,
    describe=_describe,
    vjp=(lambda g, x, y, out: matmul_(g, _swap(y)),
         lambda g, x, y, out: matmul_(_swap(x), g)),
    jvp=(lambda t, x, y, out: matmul_(t, y),
         lambda t, x, y, out: matmul_(x, t)),
)


def matmul(x, y):
    """Matrix product with NumPy's rules (1-D operands, broadcast batch axes).

    Examples
    --------
    >>> import s4tf
    >>> (s4tf.ones([2, 3]) @ s4tf.ones([3])).tolist()
    [3.0, 3.0]
    """
    x_shape, y_shape = shape_of(x), shape_of(y)
    x_rank, y_rank = len(x_shape), len(y_shape)
    if x_rank == 0 or y_rank == 0:
        raise ValueError(f"matmul needs operands of rank >= 1; got shapes {x_shape} and {y_shape}. Use * for scalars.")
    if x_rank == 1:
        return squeeze(matmul(expand_dims(x, 0), y), -2 if y_rank > 1 else -1)
    if y_rank == 1:
        return squeeze(matmul_(x, expand_dims(y, -1)), -1)
    if x_shape[-1] != y_shape[-2]:
        raise ValueError(_describe((x, y), None))
    return matmul_.binary(x, y)
