"""Callbacks that set the optimizer's learning rate: by a schedule, or on a plateau."""

from __future__ import annotations

import math

from ..optimizers.hyperparameters import schedule_of
from .callback import Callback, improved, mode_for, monitored

__all__ = ["LearningRateScheduler", "ReduceLROnPlateau"]


class LearningRateScheduler(Callback):
    """Set ``optimizer.learning_rate`` from a schedule before every step or epoch.

    Parameters
    ----------
    schedule : callable
        ``schedule(count) -> float``: an ``s4tf.optimizers.schedules`` object
        or any function of the step (``per="step"``, counted over the whole
        run from 0) or of the epoch (``per="epoch"``, from 0).
    per : str
        ``"step"`` (default) or ``"epoch"``.

    Examples
    --------
    >>> import s4tf
    >>> warmup = s4tf.callbacks.LearningRateScheduler(lambda step: min(1.0, step / 100) * 1e-3)
    """

    def __init__(self, schedule, per: str = "step"):
        if not callable(schedule):
            raise TypeError(f"schedule must be callable(count) -> float; received {schedule!r}.")
        if per not in ("step", "epoch"):
            raise ValueError(f"per must be 'step' or 'epoch'; received per={per!r}.")
        self.schedule = schedule
        self.per = per

    def _set(self, loop, count: int) -> None:
        loop.optimizer.learning_rate = float(self.schedule(count))

    def on_epoch_start(self, loop, epoch) -> None:
        if self.per == "epoch":
            self._set(loop, epoch)

    def on_batch_start(self, loop, batch) -> None:
        if self.per == "step":
            self._set(loop, loop.step)


class ReduceLROnPlateau(Callback):
    """Multiply the learning rate by ``factor`` when ``monitor`` stops improving.

    After ``patience`` epochs without an improvement larger than
    ``min_delta``, ``optimizer.learning_rate`` becomes ``max(learning_rate *
    factor, min_learning_rate)`` and a line in the loop's output says so;
    then ``cooldown`` epochs pass before waiting again. It needs a number as
    the learning rate, not a schedule.

    Parameters
    ----------
    monitor : str
        A key of the epoch's logs (``"val_loss"`` by default).
    factor : float
        In (0, 1).
    patience, cooldown : int
        Epochs.
    min_delta, min_learning_rate : float
    mode : {"auto", "min", "max"}
        ``"auto"``: larger is better for accuracies, smaller otherwise.

    Examples
    --------
    >>> import s4tf
    >>> plateau = s4tf.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=2)
    """

    def __init__(self, monitor: str = "val_loss", factor: float = 0.1, patience: int = 10,
                 min_delta: float = 1e-4, cooldown: int = 0, min_learning_rate: float = 0.0,
                 mode: str = "auto"):
        if not 0 < factor < 1:
            raise ValueError(f"ReduceLROnPlateau: factor must lie strictly between 0 and 1; "
                             f"received factor={factor!r}.")
        if patience < 0 or cooldown < 0:
            raise ValueError(f"ReduceLROnPlateau: patience and cooldown must be >= 0 epochs; "
                             f"received patience={patience!r}, cooldown={cooldown!r}.")
        self.monitor, self.factor, self.patience = monitor, factor, patience
        self.min_delta, self.cooldown = abs(min_delta), cooldown
        self.min_learning_rate = min_learning_rate
        self.mode = mode_for(monitor, mode)
        self.reductions: list[tuple[int, float]] = []  # (epoch, new rate)

    def on_fit_start(self, loop, model) -> None:
        if schedule_of(loop.optimizer) is not None:
            raise TypeError(
                "ReduceLROnPlateau sets optimizer.learning_rate, but the optimizer's rate is a "
                f"schedule ({schedule_of(loop.optimizer)!r}) that would be replaced. Use one or "
                "the other: a number as learning_rate= with ReduceLROnPlateau, or the schedule "
                "alone.")
        self.best = math.inf if self.mode == "min" else -math.inf
        self.wait = 0
        self._cooling = 0

    def on_epoch_end(self, loop, epoch, logs, model) -> None:
        value = monitored(logs, self.monitor, "ReduceLROnPlateau")
        # As PyTorch's: count bad epochs, none while cooling down, reduce past patience.
        if improved(value, self.best, self.mode, self.min_delta):
            self.best, self.wait = value, 0
        else:
            self.wait += 1
        if self._cooling:
            self._cooling -= 1
            self.wait = 0
        if self.wait <= self.patience:
            return
        old = float(loop.optimizer.learning_rate)
        new = max(old * self.factor, self.min_learning_rate)
        self.wait = 0
        if new < old:
            loop.optimizer.learning_rate = new
            self.reductions.append((epoch, new))
            self._cooling = self.cooldown
            loop.note(f"ReduceLROnPlateau: {self.monitor} has not improved for "
                      f"{self.patience + 1} epochs (best {self.best:.4f}); learning rate "
                      f"{old:.3g} -> {new:.3g} after epoch {epoch + 1}.")
