"""The differentiable op library: every primitive once, with its derivative rules.

Backends supply only kernels (:mod:`s4tf.backends`); differentiation only
engines that apply the rules (:mod:`s4tf.autodiff`, which builds on this
package and is never imported by it). The trace/tracer core a primitive needs
is here too (:mod:`s4tf.ops.tracer`), and so is what a Tensor does: importing
this package installs Tensor's operators and methods
(:mod:`s4tf.ops.tensor_methods`). This package re-exports the public ops.

From the bottom up: ``tracer`` and ``numpy_functions``; ``primitive``;
``shapes``; ``broadcasting`` (with ``reduce_sum``); ``batching_helpers`` (what
batching rules share); ``elementwise``; ``reductions``, ``linalg``,
``indexing``; ``joining``, ``softmax`` and the neural-network ops; ``ufuncs``;
``tensor_methods``.
"""

from __future__ import annotations

from .broadcasting import broadcast_to, reduce_sum, sum_to_shape
from .elementwise import (
    abs,
    add,
    cast,
    ceil,
    clip,
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
    power,
    relu,
    round,
    rsqrt,
    sigmoid,
    sign,
    sin,
    sqrt,
    square,
    sub,
    tan,
    tanh,
    where,
)
from .indexing import IndexAdd, gather, getitem, index_add, one_hot, scatter_add
from .joining import concat, pad, split, stack
from .linalg import matmul
from .primitive import Primitive, primitive
from .reductions import argmax, argmin, max, mean, min, reduce_max, reduce_min, sum, variance
from .shapes import expand_dims, reshape, shape_of, squeeze, transpose
from .softmax import log_softmax, reduce_logsumexp, softmax
from .tensor_methods import install as _install_tensor_methods

# The one ufunc table, for NumPy's protocols here and in optimizers.tensor_buffers.
from .ufuncs import ARITHMETIC_UFUNCS as ARITHMETIC_UFUNCS
from .ufuncs import UFUNCS as UFUNCS

_install_tensor_methods()

__all__ = [
    "IndexAdd", "Primitive", "abs", "add", "argmax", "argmin", "broadcast_to", "cast", "ceil",
    "clip", "concat", "cos", "div", "equal", "exp", "expand_dims", "expm1", "floor",
    "floor_div", "gather", "getitem", "greater", "greater_equal", "index_add", "less",
    "less_equal", "log", "log1p", "log_softmax", "logical_and", "logical_not", "logical_or",
    "matmul", "max", "maximum", "mean", "min", "minimum", "mod", "mul", "neg", "not_equal",
    "one_hot", "pad", "pow_scalar", "power", "primitive", "reduce_logsumexp", "reduce_max",
    "reduce_min", "reduce_sum", "relu", "reshape", "round", "rsqrt", "scatter_add", "shape_of",
    "sigmoid", "sign", "sin", "softmax", "split", "sqrt", "square", "squeeze", "stack", "sub",
    "sum", "sum_to_shape", "tan", "tanh", "transpose", "variance", "where",
]
