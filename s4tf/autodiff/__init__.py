"""Automatic differentiation by tracing with levels (reverse and forward mode), and the
transformations built on it: vmap, Jacobians and Hessians, remat, linear transposes."""

from ..non_differentiable import NonDifferentiableError
from .custom import CustomDerivative, differentiable
from .diagnostics import ZeroDerivativeWarning
from .jacobians import hessian, jacobian
from .operators import (
    derivative,
    differential,
    gradient,
    pullback,
    value_with_derivative,
    value_with_differential,
    value_with_gradient,
    value_with_pullback,
    without_derivative,
)
from .remat import remat
from .transpose import linear_transpose
from .vmap import vmap

__all__ = [
    "CustomDerivative", "NonDifferentiableError", "ZeroDerivativeWarning", "derivative",
    "differentiable", "differential", "gradient", "hessian", "jacobian", "linear_transpose",
    "pullback", "remat", "value_with_derivative", "value_with_differential",
    "value_with_gradient", "value_with_pullback", "vmap", "without_derivative",
]
