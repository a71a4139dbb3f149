"""Hyperparameter checks shared by the optimizers (S4TF's preconditions, as errors)."""

from __future__ import annotations

__all__ = ["non_negative", "unit_interval"]


def non_negative(owner: str, **values: float) -> None:
    """Raise ``ValueError`` naming the first negative hyperparameter."""
    for name, value in values.items():
        if not float(value) >= 0:
            raise ValueError(f"{owner}: {name} must be >= 0, got {value!r}.")


def unit_interval(owner: str, **values: float) -> None:
    """Raise ``ValueError`` naming the first hyperparameter outside [0, 1]."""
    for name, value in values.items():
        if not 0 <= float(value) <= 1:
            raise ValueError(f"{owner}: {name} must be between 0 and 1, got {value!r}.")
