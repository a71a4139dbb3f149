"""Matrix products."""

from __future__ import annotations

from .batching_helpers import align_batched, elementwise_apply, move_axis_to_front
from .broadcasting import reduce_sum
from .elementwise import add, mul
from .primitive import GenericRule, primitive
from .shapes import _reshape, expand_dims, shape_of, squeeze

__all__ = ["matmul"]


def _describe(args, error):
    a, b = (shape_of(x) for x in args)
    return (
        f"matmul: shapes {a} and {b} do not fit: the last axis of the first ({a[-1] if a else '-'}) "
        f"must equal the second-to-last axis of the second ({b[-2] if len(b) > 1 else '-'}), and "
        "leading (batch) axes must broadcast. Transpose an operand (t.T) if you meant that."
    )


def _matmul_batch(primitive, args, dims):
    """Batching rule of the matmul family: one product over the batch, moving axes only if needed."""
    (x, y), (dx, dy) = args, dims
    if dx is None and dy is None:
        return primitive(x, y), None
    if dy is None and primitive is not matmul_tn and len(shape_of(y)) == 2:
        # Rows of x times one matrix: the batch joins the rows, and one GEMM does the
        # whole batch (a stacked matmul would run one small product per example).
        x = move_axis_to_front(x, dx)
        shape = shape_of(x)
        rows = 1
        for n in shape[:-1]:
            rows *= n
        out = primitive(_reshape(x, shape=(rows, shape[-1])), y)
        return _reshape(out, shape=(*shape[:-1], shape_of(out)[-1])), 0
    rank = max(len(shape_of(a)) - (d is not None) for a, d in zip(args, dims, strict=True))
    x, y = align_batched(args, dims, rank)
    if _contracted_size(primitive, x) == 1:
        return _outer_product(primitive, x, y), 0
    return primitive(x, y), 0


def _contracted_size(primitive, x):
    return shape_of(x)[-2 if primitive is matmul_tn else -1]


def _outer_product(primitive, x, y):
    """``primitive(x, y)`` when the contracted axis has size 1: a broadcast product.

    A per-example weight gradient is a batch of outer products (``x^T @ g`` of
    one row each); BLAS runs them one small product at a time, a broadcast
    multiply in one pass.
    """
    xs, ys = shape_of(x), shape_of(y)
    if primitive is matmul_tn:  # (..., 1, n) -> (..., n, 1): the same memory order
        x = _reshape(x, shape=(*xs[:-2], xs[-1], 1))
    if primitive is matmul_nt:  # (..., m, 1) -> (..., 1, m)
        y = _reshape(y, shape=(*ys[:-2], 1, ys[-2]))
    return mul(x, y)


_MATMUL_BATCH = GenericRule(_matmul_batch)


# A matmul's cotangents multiply by a transposed operand: x @ y's are g @ y^T and
# x^T @ g. matmul_nt (x @ y^T) and matmul_tn (x^T @ y) are those products as one op
# each, the transpose inside the kernel (a free view BLAS reads as it is), so a
# backward pass records and runs no transposes. Each one's own cotangents are
# products of the three kinds again: the family is closed under differentiation.
matmul_ = primitive(
    "matmul",
    promote=True,
    batch=_MATMUL_BATCH,
    describe=_describe,
    vjp=(lambda g, x, y, out: matmul_nt(g, y),
         lambda g, x, y, out: matmul_tn(x, g)),
    jvp=(lambda t, x, y, out: matmul_(t, y),
         lambda t, x, y, out: matmul_(x, t)),
)
matmul_nt = primitive(
    "matmul_nt",
    promote=True,
    batch=_MATMUL_BATCH,
    vjp=(lambda g, x, y, out: matmul_(g, y),
         lambda g, x, y, out: matmul_tn(g, x)),
    jvp=(lambda t, x, y, out: matmul_nt(t, y),
         lambda t, x, y, out: matmul_nt(x, t)),
)
matmul_tn = primitive(
    "matmul_tn",
    promote=True,
    batch=_MATMUL_BATCH,
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


def _dense_batch(args, dims):
    (x, w, b), (dx, dw, db) = args, dims
    if dw is None and db is None:
        # One layer for the whole batch: its examples' rows are the rows of one product.
        x = move_axis_to_front(x, dx)
        size, rows, columns = shape_of(x)
        out = dense_(_reshape(x, shape=(size * rows, columns)), w, b)
        return _reshape(out, shape=(size, rows, shape_of(out)[-1])), 0
    # Batched weights (a batch of layers): a batched product, then the bias.
    y, y_dim = _matmul_batch(matmul_, (x, w), (dx, dw))
    return elementwise_apply(add, (y, b), (y_dim, db))


dense_ = primitive(
    "dense",
    promote=True,
    batch=_dense_batch,
    vjp=(lambda g, x, w, b, out: matmul_nt(g, w),
         lambda g, x, w, b, out: matmul_tn(x, g),
         lambda g, x, w, b, out: _row_sum(g)),
    jvp=(lambda t, x, w, b, out: matmul_(t, w),
         lambda t, x, w, b, out: matmul_(x, t),
         lambda t, x, w, b, out: t),
)

