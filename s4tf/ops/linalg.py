"""Matrix products."""

from __future__ import annotations

from .broadcasting import reduce_sum
from .primitive import primitive
from .shapes import _reshape, expand_dims, shape_of, squeeze

__all__ = ["matmul"]


def _describe(args, error):
    a, b = (shape_of(x) for x in args)
    return (
        f"matmul: shapes {a} and {b} do not fit: the last axis of the first ({a[-1] if a else '-'}) "
        f"must equal the second-to-last axis of the second ({b[-2] if len(b) > 1 else '-'}), and "
        "leading (batch) axes must broadcast. Transpose an operand (t.T) if you meant that."
    )


# A matmul's cotangents multiply by a transposed operand: x @ y's are g @ y^T and
# x^T @ g. matmul_nt (x @ y^T) and matmul_tn (x^T @ y) are those products as one op
# each, the transpose inside the kernel (a free view BLAS reads as it is), so a
# backward pass records and runs no transposes. Each one's own cotangents are
# products of the three kinds again: the family is closed under differentiation.
matmul_ = primitive(
    "matmul",
    promote=True,
    describe=_describe,
    vjp=(lambda g, x, y, out: matmul_nt(g, y),
         lambda g, x, y, out: matmul_tn(x, g)),
    jvp=(lambda t, x, y, out: matmul_(t, y),
         lambda t, x, y, out: matmul_(x, t)),
)
matmul_nt = primitive(
    "matmul_nt",
    promote=True,
    vjp=(lambda g, x, y, out: matmul_(g, y),
         lambda g, x, y, out: matmul_tn(g, x)),
    jvp=(lambda t, x, y, out: matmul_nt(t, y),
         lambda t, x, y, out: matmul_nt(x, t)),
)
matmul_tn = primitive(
    "matmul_tn",
    promote=True,
    vjp=(lambda g, x, y, out: matmul_nt(y, g),
         lambda g, x, y, out: matmul_(x, g)),
    jvp=(lambda t, x, y, out: matmul_tn(t, y),
         lambda t, x, y, out: matmul_tn(x, t)),
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


# A dense layer's x @ w + b (matrices x and w, a bias row b of w's dtype; layers.Dense
# checks the shapes) as one primitive: one node to record and to pull back (and one on
# the lazy backend) instead of a matmul and a broadcast add, the same values. The bias's
# cotangent is the output's summed over the rows; its tangent is broadcast up to the
# output's shape by the forward engine.
def _row_sum(g):
    """The sum of the rows of matrix ``g``: a bias's cotangent (one row: a reshape)."""
    rows, columns = shape_of(g)
    if rows == 1:
        return _reshape(g, shape=(columns,))
    return reduce_sum(g, axis=(0,), keepdims=False)


dense_ = primitive(
    "dense",
    promote=True,
    vjp=(lambda g, x, w, b, out: matmul_nt(g, w),
         lambda g, x, w, b, out: matmul_tn(x, g),
         lambda g, x, w, b, out: _row_sum(g)),
    jvp=(lambda t, x, w, b, out: matmul_(t, w),
         lambda t, x, w, b, out: matmul_(x, t),
         lambda t, x, w, b, out: t),
)

