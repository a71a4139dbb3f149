"""TensorBoard event files of a training run, written with tensorboardX."""

from __future__ import annotations

import os

from .callback import Callback

__all__ = ["TensorBoard"]


class TensorBoard(Callback):
    """Write the epoch's metrics (and the learning rate) as TensorBoard scalars.

    As Keras does, training values go to ``log_dir/train`` and validation
    values to ``log_dir/validation``, both tagged ``epoch_<metric>``
    (``epoch_loss``, ``epoch_accuracy``, ...), so TensorBoard draws the two
    curves of a metric on one chart; the x axis is the epoch counted from 1
    (as the progress lines and :class:`CSVLogger` count). ``update_freq=n``
    also writes the training loss of every ``n``-th update as ``batch_loss``
    (reading it waits for that step). View with ``tensorboard --logdir
    log_dir``. Needs tensorboardX: ``pip install "s4tf[tensorboard]"``.

    Parameters
    ----------
    log_dir : path-like
    update_freq : "epoch" or int
    learning_rate : bool
        Also write ``learning_rate`` (the optimizer's, at the end of each epoch).

    Examples
    --------
    >>> import s4tf, tempfile
    >>> board = s4tf.callbacks.TensorBoard(tempfile.mkdtemp())
    """

    def __init__(self, log_dir, update_freq="epoch", *, learning_rate: bool = True):
        if update_freq != "epoch" and (isinstance(update_freq, bool)
                                       or not isinstance(update_freq, int) or update_freq < 1):
            raise ValueError(f"TensorBoard: update_freq must be 'epoch' or a positive number of "
                             f"steps; received update_freq={update_freq!r}.")
        self.log_dir = os.fspath(log_dir)
        self.update_freq = update_freq
        self.learning_rate = learning_rate
        self._writers = None

    def on_fit_start(self, loop, model) -> None:
        try:
            from tensorboardX import SummaryWriter
        except ImportError:
            raise ImportError(
                "s4tf.callbacks.TensorBoard writes event files with tensorboardX, which is not "
                "installed: pip install \"s4tf[tensorboard]\" (or pip install tensorboardX)."
            ) from None
        self.close()
        self._writers = {split: SummaryWriter(os.path.join(self.log_dir, split))
                         for split in ("train", "validation")}

    def on_batch_end(self, loop, batch, loss) -> None:
        if self._writers is not None and self.update_freq != "epoch" \
                and loop.step % self.update_freq == 0:
            self._writers["train"].add_scalar("batch_loss", float(loss), loop.step)

    def on_epoch_end(self, loop, epoch, logs, model) -> None:
        if self._writers is None:
            return
        for name, value in logs.items():
            split, tag = ("validation", name[4:]) if name.startswith("val_") else ("train", name)
            self._writers[split].add_scalar(f"epoch_{tag}", value, epoch + 1)
        if self.learning_rate and hasattr(loop.optimizer, "learning_rate"):
            self._writers["train"].add_scalar("learning_rate",
                                              float(loop.optimizer.learning_rate), epoch + 1)
        for writer in self._writers.values():
            writer.flush()  # readable now, even if a later epoch is interrupted

    def on_fit_end(self, loop, model):
        self.close()
        return None

    def close(self) -> None:
        """Close the event files (``fit`` does at its end; call it after an interrupted fit)."""
        if self._writers is not None:
            for writer in self._writers.values():
                writer.close()
            self._writers = None
