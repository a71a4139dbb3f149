"""The callback base class and what monitoring callbacks share.

See :mod:`s4tf.training_loop.callbacks` for the events and the callbacks.
"""

from __future__ import annotations

import math

from ..tensor import Tensor

__all__ = ["Callback", "improved", "mode_for", "monitored"]


class Callback:
    """Base class: override the events you need; each default does nothing.

    Examples
    --------
    >>> import s4tf
    >>> class StopAfterTenSteps(s4tf.callbacks.Callback):
    ...     def on_batch_end(self, loop, batch, loss):
    ...         if loop.step >= 10:
    ...             loop.stop_training = True
    """

    def on_fit_start(self, loop, model) -> None:
        """Training is about to start with ``model``."""

    def on_epoch_start(self, loop, epoch: int) -> None:
        """Epoch ``epoch`` (counted from 0) starts."""

    def on_batch_start(self, loop, batch: int) -> None:
        """Batch ``batch`` of the epoch starts; ``loop.step`` counts all batches."""

    def on_loss(self, loop, batch: int, loss: Tensor) -> None:
        """Batch ``batch``'s ``loss`` (unread tensor) is computed; its update has not run yet."""

    def on_update_start(self, loop, gradients):
        """The gradient is known and the update is next; return a new gradient to replace it."""
        return None

    def on_batch_end(self, loop, batch: int, loss: Tensor) -> None:
        """The update of batch ``batch`` is done; ``loss`` is its (unread) loss tensor."""

    def on_validation_start(self, loop, model):
        """Validation of ``model`` is next; return a model to evaluate instead of it."""
        return None

    def on_epoch_end(self, loop, epoch: int, logs: dict, model) -> None:
        """Epoch ``epoch`` ended; ``logs`` maps metric names (``val_`` for validation) to floats."""

    def on_fit_end(self, loop, model):
        """Training ended; return a model to make :meth:`TrainingLoop.fit` return it instead."""
        return None


def improved(value: float, best: float, mode: str, min_delta: float) -> bool:
    if math.isnan(value):
        return False
    if mode == "min":
        return value < best - min_delta
    return value > best + min_delta


def mode_for(monitor: str, mode: str) -> str:
    if mode not in ("auto", "min", "max"):
        raise ValueError(f"mode must be 'auto', 'min' or 'max'; received mode={mode!r}.")
    if mode != "auto":
        return mode
    return "max" if "acc" in monitor else "min"


def monitored(logs: dict, monitor: str, who: str) -> float:
    if monitor not in logs:
        raise KeyError(
            f"{who} monitors {monitor!r}, but the epoch's logs hold only {sorted(logs)}. "
            "Pass a validation set for val_ metrics, or monitor one of those names."
        )
    return logs[monitor]
