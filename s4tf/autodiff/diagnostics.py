"""The zero-derivative warning: the S4TF compiler's warning, at run time.

The non-differentiable-operation error is raised by tracers, below the
differentiation engines: :mod:`s4tf.non_differentiable`.
"""

from __future__ import annotations

import warnings

from ..user_frames import user_location, user_stacklevel

__all__ = ["ZeroDerivativeWarning", "warn_zero_derivative"]


class ZeroDerivativeWarning(UserWarning):
    """The differentiated function's result does not depend on its arguments."""


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
