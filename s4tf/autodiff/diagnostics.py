"""Run-time versions of the S4TF compiler's differentiation errors and warnings."""

from __future__ import annotations

import warnings

from .._user_code import user_location, user_stacklevel

__all__ = ["NonDifferentiableError", "ZeroDerivativeWarning", "user_location", "warn_zero_derivative"]


class NonDifferentiableError(TypeError):
    """A non-differentiable operation was applied to a value being differentiated.

    Examples
    --------
    >>> import s4tf, math
    >>> try:
    ...     s4tf.gradient(1.0, of=lambda x: math.sin(x))
    ... except s4tf.NonDifferentiableError as e:
    ...     print("caught")
    caught
    """


class ZeroDerivativeWarning(UserWarning):
    """The differentiated function's result does not depend on its arguments."""


def non_differentiable(operation: str) -> NonDifferentiableError:
    """The error for ``operation`` applied to a traced value, naming the user's line."""
    return NonDifferentiableError(
        f"{operation} is not differentiable, but it was applied to a value being "
        f"differentiated, at\n    {user_location()}\n"
        "Derivatives cannot flow through it. If the value is meant to be a constant, wrap it "
        "in s4tf.without_derivative(x) first; to differentiate a foreign function, give it "
        "a derivative with s4tf.differentiable(fn, vjp=..., jvp=...); for math on values "
        "use the s4tf functions (s4tf.sin, s4tf.exp, ...) instead of math/NumPy ones."
    )


def warn_zero_derivative(operator: str) -> None:
    """Warn that a derivative is always zero, pointing at the user's call."""
    location = user_location()
    warnings.warn(
        f"{operator}: the result does not depend on the differentiation arguments, so the "
        f"derivative is always zero (at {location}). If that is intended, make it explicit "
        "with s4tf.without_derivative(...).",
        ZeroDerivativeWarning,
        stacklevel=user_stacklevel(),
    )
