"""s4tf: Swift for TensorFlow's ideas in Python.

Immutable value-semantic layers, automatic differentiation of any Differentiable
value, copy-on-write optimizers, and one Tensor API over NumPy, CuPy and a lazy
XLA tensor. See ``DESIGN.md`` for the contract this package keeps.
"""

# Tensor first: the op library and the AD engine are built on it.
from .tensor import Tensor

# isort: split
from . import datasets, random
from .autodiff import (
    CustomDerivative, NonDifferentiableError, ZeroDerivativeWarning, derivative,
    differentiable, differential, gradient, pullback, value_with_derivative,
    value_with_differential, value_with_gradient, value_with_pullback, without_derivative,
)
from .backends.base import backend, barrier, get_backend, set_backend
from .backends.transfer import to_backend
from .creation import arange, eye, full, ones, ones_like, zeros, zeros_like
from .differentiable import Differentiable, State, moved, no_derivative, replace
from .dtypes import DType, bfloat16, float16, float32, float64, int32, int64
from .dtypes import bool_ as bool  # noqa: A001  (s4tf.bool, as in the contract)
from .ops import (
    abs, argmax, argmin, broadcast_to, cast, ceil, clip, concat, cos, exp, expand_dims, expm1,
    floor, gather, log, log1p, log_softmax, logical_and, logical_not, logical_or, matmul,
    maximum, mean, minimum, one_hot, pad, reduce_logsumexp, reshape, round, rsqrt, sigmoid,
    sign, sin, softmax, split, sqrt, square, squeeze, stack, tan, tanh, transpose, variance,
    where,
)
from .ops import max as reduce_max_fn  # noqa: F401
from .ops import sum as reduce_sum_fn  # noqa: F401
from .tensor import Tensor
from .tree import tree_flatten, tree_leaves, tree_map, tree_unflatten

__version__ = "0.1.0"

# `from .differentiable import ...` bound the submodule to this name; the decorator wins.
from .autodiff import differentiable  # noqa: E402, F811

# Importing the submodule s4tf.differentiable (above) rebinds that name to the module;
# the contract's s4tf.differentiable is the custom-derivative decorator.
from .autodiff import differentiable  # noqa: E402, F811

__all__ = [
    "CustomDerivative", "DType", "Differentiable", "NonDifferentiableError", "State", "Tensor",
    "ZeroDerivativeWarning", "abs", "arange", "argmax", "argmin", "backend", "barrier",
    "bfloat16", "bool", "broadcast_to", "datasets", "cast", "ceil", "clip", "concat", "cos", "derivative",
    "differentiable", "differential", "exp", "expand_dims", "expm1", "eye", "float16",
    "float32", "float64", "floor", "full", "gather", "get_backend", "gradient", "int32",
    "int64", "log", "log1p", "log_softmax", "logical_and", "logical_not", "logical_or",
    "matmul", "maximum", "mean", "minimum", "moved", "no_derivative", "one_hot", "ones",
    "ones_like", "pad", "pullback", "random", "reduce_logsumexp", "replace", "reshape",
    "round", "rsqrt", "set_backend", "sigmoid", "sign", "sin", "softmax", "split", "sqrt",
    "square", "squeeze", "stack", "tan", "tanh", "to_backend", "transpose", "tree_flatten",
    "tree_leaves", "tree_map", "tree_unflatten", "value_with_derivative",
    "value_with_differential", "value_with_gradient", "value_with_pullback", "variance",
    "where", "without_derivative", "zeros", "zeros_like",
]
