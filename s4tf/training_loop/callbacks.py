"""Callbacks: code the training loop runs at its events.

Events, in order: ``fit_start``, then per epoch ``epoch_start``, per batch
``batch_start``, ``loss`` (the batch's loss is computed), ``update_start``
(after the gradient, before the optimizer update; it may replace the
gradient), ``batch_end``, then ``validation_start`` (it may give another
model to evaluate), ``epoch_end`` (after validation, with the epoch's logs)
and finally ``fit_end``. Any callback may stop training by
setting ``loop.stop_training = True`` (after the current batch), or at once by
raising: ``fit`` re-raises, with ``loop.model`` the model after the last
finished step.
"""

from __future__ import annotations

import csv
import math
import os

from ..checkpoint import save, save_training_state
from ..tensor import Tensor
from ..tree import tree_map
from .averaging import ExponentialMovingAverage
from .callback import Callback, improved, mode_for, monitored
from .learning_rate import LearningRateScheduler, ReduceLROnPlateau
from .tensorboard import TensorBoard

__all__ = [
    "CSVLogger", "Callback", "EarlyStopping", "ExponentialMovingAverage",
    "LearningRateScheduler", "ModelCheckpoint", "NonFiniteLossError", "ReduceLROnPlateau",
    "TensorBoard", "TerminateOnNaN",
]


class CSVLogger(Callback):
    """Append one row per epoch (epoch number and every metric) to a CSV file.

    Examples
    --------
    >>> import s4tf, tempfile, os
    >>> logger = s4tf.callbacks.CSVLogger(os.path.join(tempfile.mkdtemp(), "log.csv"))
    """

    def __init__(self, path, append: bool = False):
        self.path = os.fspath(path)
        self.append = append
        self._columns: list[str] | None = None

    def on_fit_start(self, loop, model) -> None:
        self._columns = None
        if not self.append and os.path.exists(self.path):
            os.remove(self.path)

    def on_epoch_end(self, loop, epoch, logs, model) -> None:
        new_file = not os.path.exists(self.path) or os.path.getsize(self.path) == 0
        if self._columns is None:
            self._columns = ["epoch", *logs]
        with open(self.path, "a", newline="") as file:
            writer = csv.writer(file)
            if new_file:
                writer.writerow(self._columns)
            writer.writerow([epoch + 1, *(logs.get(c, "") for c in self._columns[1:])])


class ModelCheckpoint(Callback):
    """Save the model (or a resumable training state) at the end of epochs.

    Parameters
    ----------
    path : str
        File to write; may contain ``{epoch}`` (1-based) and metric names, e.g.
        ``"ckpt/lenet-{epoch:02d}-{val_accuracy:.3f}.safetensors"``.
    save_best_only : bool
        Only save when ``monitor`` improved.
    monitor, mode : str
        What "best" means (``mode="auto"``: larger is better for accuracies).
    training_state : bool
        Write :func:`s4tf.save_training_state` (model, optimizer, epoch, random
        state) instead of :func:`s4tf.save`, so training can resume from the file.

    Examples
    --------
    >>> import s4tf
    >>> saver = s4tf.callbacks.ModelCheckpoint("lenet-{epoch}.safetensors")
    """

    def __init__(self, path, save_best_only: bool = False, monitor: str = "val_loss",
                 mode: str = "auto", training_state: bool = False):
        self.path = os.fspath(path)
        self.save_best_only = save_best_only
        self.monitor = monitor
        self.mode = mode_for(monitor, mode)
        self.training_state = training_state
        self.best = math.inf if self.mode == "min" else -math.inf
        self.saved: list[str] = []

    def on_epoch_end(self, loop, epoch, logs, model) -> None:
        if self.save_best_only:
            value = monitored(logs, self.monitor, "ModelCheckpoint")
            if not improved(value, self.best, self.mode, 0.0):
                return
            self.best = value
        path = self.path.format(epoch=epoch + 1, **logs)
        if self.training_state:
            save_training_state(path, model, loop.optimizer, epoch=epoch + 1)
        else:
            save(model, path)
        self.saved.append(path)


class EarlyStopping(Callback):
    """Stop training when ``monitor`` has not improved for ``patience`` epochs.

    With ``restore_best=True`` the loop returns the best model seen (a copy of
    it is kept, so updates of the live model cannot be in place while it is).
    When it stops training it says so in one line of the loop's output (see
    :meth:`TrainingLoop.note <s4tf.TrainingLoop.note>`): the epoch, what did
    not improve, and the best value and its epoch.

    Examples
    --------
    >>> import s4tf
    >>> stop = s4tf.callbacks.EarlyStopping(monitor="val_loss", patience=2)
    """

    def __init__(self, monitor: str = "val_loss", patience: int = 0, min_delta: float = 0.0,
                 mode: str = "auto", restore_best: bool = False):
        if patience < 0:
            raise ValueError(f"patience must be >= 0 epochs; received patience={patience!r}.")
        self.monitor = monitor
        self.patience = patience
        self.min_delta = abs(min_delta)
        self.mode = mode_for(monitor, mode)
        self.restore_best = restore_best

    def on_fit_start(self, loop, model) -> None:
        self.best = math.inf if self.mode == "min" else -math.inf
        self.wait = 0
        self.best_epoch = None
        self.stopped_epoch = None
        self._best_model = None

    def on_epoch_end(self, loop, epoch, logs, model) -> None:
        value = monitored(logs, self.monitor, "EarlyStopping")
        if improved(value, self.best, self.mode, self.min_delta):
            self.best, self.wait, self.best_epoch = value, 0, epoch
            if self.restore_best:
                # Copies, not references: the live model may then still update in place.
                self._best_model = tree_map(
                    lambda leaf: leaf + 0 if isinstance(leaf, Tensor) else leaf, model)
            return
        self.wait += 1
        if self.wait > self.patience:
            self.stopped_epoch = epoch
            loop.stop_training = True
            kept = ""
            if self.restore_best and self._best_model is not None:
                kept = f"; fit returns the model of epoch {self.best_epoch + 1}"
            best = ("no epoch gave a number" if self.best_epoch is None else
                    f"the best was {self.best:.4f} in epoch {self.best_epoch + 1}")
            loop.note(f"EarlyStopping: stopped after epoch {epoch + 1}: {self.monitor} has not "
                      f"improved by more than {self.min_delta} for {self.wait} epoch"
                      f"{'s' if self.wait != 1 else ''} ({best}{kept}).")

    def on_fit_end(self, loop, model):
        best, self._best_model = self._best_model, None
        return best


class NonFiniteLossError(FloatingPointError):
    """A training loss was NaN or infinite (raised by :class:`TerminateOnNaN`).

    Attributes
    ----------
    loss : float
        The value read.
    epoch, batch : int
        Where it was computed, both counted from 0 (``loop.epoch`` and the
        batch's index in that epoch).
    step : int
        The update that loss belongs to, counted from 1 over the whole run
        (``loop.step`` once that update is applied).
    """

    def __init__(self, message: str, *, loss: float, epoch: int, batch: int, step: int):
        super().__init__(message)
        self.loss, self.epoch, self.batch, self.step = loss, epoch, batch, step


class TerminateOnNaN(Callback):
    """Stop training with :class:`NonFiniteLossError` when a loss is NaN or infinite.

    :class:`s4tf.TrainingLoop` adds one by default (``terminate_on_nan=False``
    turns that off). The error names the epoch, the batch, the step and the
    value, and ``loop.model`` is left as follows:

    - On an eager backend (naive, cupy) the loss is read as soon as it is
      computed, before its update: ``loop.model`` is the model that gave the
      non-finite loss, untouched by it (its last finite state when the loss
      blew up because the parameters did), and the optimizer matches it.
    - On the lazy xla backend, reading a step's loss at once would wait for
      that step to finish on the device at every step. The loss is read one
      step late instead, when the next step has been launched (what a live
      progress bar does), and at the end of each epoch: the model has then
      taken the bad step and the next one, and may hold NaNs. Keep
      checkpoints (:class:`ModelCheckpoint`) to go back to a finite model.

    Examples
    --------
    >>> import math, s4tf
    >>> stop = s4tf.callbacks.TerminateOnNaN()
    >>> class Loop:                 # what the callback reads of the loop
    ...     epoch, step = 0, 6
    >>> stop.on_fit_start(Loop, model=None)
    >>> try:
    ...     stop.on_loss(Loop, batch=2, loss=s4tf.Tensor(math.nan))
    ... except s4tf.callbacks.NonFiniteLossError as error:
    ...     print(error.epoch, error.batch, error.step, error.loss)
    0 2 7 nan
    """

    def on_fit_start(self, loop, model) -> None:
        self._held = None  # the lazy backend's last loss, read one step late

    def on_loss(self, loop, batch, loss) -> None:
        if not _lazy(loss):
            _check_loss(float(loss), loop.epoch, batch, loop.step + 1, late=False)

    def on_batch_end(self, loop, batch, loss) -> None:
        if not _lazy(loss):
            return
        # This step was launched by the barrier; reading the previous one's loss waits
        # for that step only, while the device runs this one.
        self._check_held()
        self._held = (loss, loop.epoch, batch, loop.step)

    def on_epoch_end(self, loop, epoch, logs, model) -> None:
        self._check_held()  # the epoch's line has read its sums: no wait left

    def _check_held(self) -> None:
        held, self._held = getattr(self, "_held", None), None
        if held is not None:
            loss, epoch, batch, step = held
            _check_loss(float(loss), epoch, batch, step, late=True)


def _lazy(loss) -> bool:
    """Whether reading ``loss`` now would run (and wait for) work not launched yet."""
    return isinstance(loss, Tensor) and loss._backend.lazy


def _check_loss(value: float, epoch: int, batch: int, step: int, late: bool) -> None:
    if math.isfinite(value):
        return
    where = (f"TerminateOnNaN: the training loss is {value} in epoch {epoch + 1} (loop.epoch "
             f"== {epoch}), batch {batch} of that epoch, training step {step}.")
    if late:
        state = (" The lazy xla backend reads each loss one step late (reading it at once "
                 "would wait for every step), so that step and the next were applied: "
                 "loop.model is the model after them and may hold NaN; restore a checkpoint "
                 "(ModelCheckpoint) to go back to a finite one.")
    else:
        state = (f" That step was not applied: loop.model is the model after step {step - 1}, "
                 "which gave this loss, and the optimizer matches it.")
    advice = (" Common causes: a learning rate too high, a log or a division of zero, NaN "
              "or infinite values in the data. TrainingLoop(..., terminate_on_nan=False) "
              "trains on regardless.")
    raise NonFiniteLossError(where + state + advice, loss=value, epoch=epoch, batch=batch,
                             step=step)
