"""Run-time versions of the S4TF compiler's differentiation errors and warnings."""

from __future__ import annotations

import linecache
import os
import sys
import warnings

__all__ = ["NonDifferentiableError", "ZeroDerivativeWarning", "user_location", "warn_zero_derivative"]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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


def _outside(filename: str, skip_modules) -> bool:
    inside = os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep)
    return not inside and not filename.startswith("<frozen") and not any(
        filename.endswith(f"{name}.py") for name in skip_modules
    )


def user_stacklevel(skip_modules=("contextlib", "functools")) -> int:
    """The ``warnings.warn`` stacklevel of the first frame outside s4tf, seen from the caller."""
    frame, level = sys._getframe(2), 2
    while frame is not None and not _outside(frame.f_code.co_filename, skip_modules):
        frame, level = frame.f_back, level + 1
    return level


def user_location(skip_modules=("contextlib", "functools")) -> str:
    """``file:line: source`` of the innermost stack frame outside the s4tf package."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if _outside(filename, skip_modules):
            line = linecache.getline(filename, frame.f_lineno).strip()
            where = f"{filename}:{frame.f_lineno}"
            return f"{where}: {line}" if line else where
        frame = frame.f_back
    return "<unknown location>"


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
