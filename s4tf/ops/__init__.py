"""The differentiable op library: every primitive once, with its derivative rules.

Backends supply only kernels (:mod:`s4tf.backends`); differentiation only
derivative rules (:mod:`s4tf.autodiff`). This package re-exports the public ops.
"""

from __future__ import annotations

import numbers

from ..tensor import Tensor
from .elementwise import (
    abs,
    add,
    cast,
    ceil,
    cos,
    div,
    equal,
    exp,
    expm1,
    floor,
    floor_div,
    greater,
    greater_equal,
    less,
    less_equal,
    log,
    log1p,
    logical_and,
    logical_not,
    logical_or,
    maximum,
    minimum,
    mod,
    mul,
    neg,
    not_equal,
    pow_scalar,
    round,
    rsqrt,
    sigmoid,
    sign,
    sin,
    sqrt,
    sub,
    tan,
    tanh,
    where,
)
from .elementwise import pow as _pow
from .indexing import IndexAdd, gather, getitem, index_add, one_hot, scatter_add
from .linalg import matmul
from .primitive import Primitive, primitive
from .reductions import (
    argmax,
    argmin,
    max,
    mean,
    min,
    reduce_max,
    reduce_min,
    reduce_sum,
    sum,
    sum_to_shape,
    variance,
)
from .shapes import (
    broadcast_to,
    concat,
    expand_dims,
    pad,
    reshape,
    shape_of,
    split,
    squeeze,
    stack,
    transpose,
)
from .softmax import log_softmax, reduce_logsumexp, softmax


def power(x, y):
    """``x ** y``; a constant Python exponent stays static (``x ** 2`` is ``x * x``).

    Examples
    --------
    >>> import s4tf
    >>> (s4tf.Tensor([3.0]) ** 2).tolist()
    [9.0]
    """
    if isinstance(y, numbers.Real) and not isinstance(y, bool) and not isinstance(y, Tensor):
        if isinstance(x, Tensor):
            if y == 1:
                return x
            return pow_scalar(x, exponent=float(y))
    return _pow(x, y)


def square(x):
    """``x * x``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.square(s4tf.Tensor([-2.0])).tolist()
    [4.0]
    """
    return mul(x, x)


def clip(x, lo, hi):
    """``x`` limited to ``[lo, hi]``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.Tensor([-2.0, 0.5, 3.0]).clip(0.0, 1.0).tolist()
    [0.0, 0.5, 1.0]
    """
    return minimum(maximum(x, lo), hi)


# NumPy ufuncs a Tensor answers when NumPy meets it (`array + tensor`).
UFUNCS = {
    "add": add, "subtract": sub, "multiply": mul, "true_divide": div, "divide": div,
    "power": power, "matmul": matmul, "negative": neg, "absolute": abs, "exp": exp,
    "log": log, "sqrt": sqrt, "sin": sin, "cos": cos, "tanh": tanh, "maximum": maximum,
    "minimum": minimum, "equal": equal, "not_equal": not_equal, "less": less,
    "less_equal": less_equal, "greater": greater, "greater_equal": greater_equal,
}
# The ones that are Python operators: allowed on traced values (`array * x`).
ARITHMETIC_UFUNCS = frozenset(
    {"add", "subtract", "multiply", "true_divide", "divide", "power", "matmul", "negative",
     "equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}
)

__all__ = [
    "IndexAdd", "Primitive", "abs", "add", "argmax", "argmin", "broadcast_to", "cast", "ceil",
    "clip", "concat", "cos", "div", "equal", "exp", "expand_dims", "expm1", "floor",
    "floor_div", "gather", "getitem", "greater", "greater_equal", "index_add", "less",
    "less_equal", "log", "log1p", "log_softmax", "logical_and", "logical_not", "logical_or",
    "matmul", "max", "maximum", "mean", "min", "minimum", "mod", "mul", "neg", "not_equal",
    "one_hot", "pad", "pow_scalar", "power", "primitive", "reduce_logsumexp", "reduce_max",
    "reduce_min", "reduce_sum", "reshape", "round", "rsqrt", "scatter_add", "shape_of",
    "sigmoid", "sign", "sin", "softmax", "split", "sqrt", "square", "squeeze", "stack", "sub",
    "sum", "sum_to_shape", "tan", "tanh", "transpose", "variance", "where",
]
