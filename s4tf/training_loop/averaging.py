"""An exponential moving average of the weights, evaluated in place of the live model."""

from __future__ import annotations

from ..tensor import Tensor
from ..tree import tree_map
from .callback import Callback

__all__ = ["ExponentialMovingAverage"]


def _floating(leaf) -> bool:
    return isinstance(leaf, Tensor) and leaf.dtype.is_floating


class ExponentialMovingAverage(Callback):
    """Keep ``average = decay * average + (1 - decay) * weights`` after every update.

    Validation (``val_`` metrics) evaluates the average instead of the live
    model, and ``fit`` returns the average (``apply_at_end=False`` returns
    the live model; the average is then :attr:`average`). Every floating
    tensor of the model is averaged, batch-norm statistics included; other
    fields are taken from the live model. With ``warmup`` the decay of update
    ``n`` is ``min(decay, (1 + n) / (10 + n))`` (as TensorFlow's
    ``ExponentialMovingAverage`` with ``num_updates``), so a short run is not
    dominated by the initial weights.

    The average is a separate copy of the weights (one model's worth of
    memory) made of new tensors at each step, so the optimizer still updates
    the live model in place.

    Parameters
    ----------
    decay : float
        In [0, 1); 0.999 suits runs of thousands of steps, 0.99 shorter ones.
    warmup : bool
    apply_at_end : bool

    Attributes
    ----------
    average
        The averaged model (``None`` before ``fit``).

    Examples
    --------
    >>> import s4tf
    >>> from s4tf import datasets, layers, optimizers
    >>> data = datasets.Digits(batch_size=64, seed=0)
    >>> model = layers.Sequential(layers.Flatten(), layers.Dense(64, 10))
    >>> ema = s4tf.callbacks.ExponentialMovingAverage(decay=0.99)
    >>> loop = s4tf.TrainingLoop(training=data.training, validation=data.validation,
    ...                          optimizer=optimizers.Adam(model, learning_rate=1e-2),
    ...                          loss=s4tf.softmax_cross_entropy, callbacks=[ema],
    ...                          progress=False)
    >>> averaged = loop.fit(model, epochs=1)     # the average, also in ema.average
    """

    def __init__(self, decay: float = 0.999, *, warmup: bool = True, apply_at_end: bool = True):
        if not 0.0 <= decay < 1.0:
            raise ValueError(f"ExponentialMovingAverage: decay must lie in [0, 1); received "
                             f"decay={decay!r}.")
        self.decay, self.warmup, self.apply_at_end = float(decay), warmup, apply_at_end
        self.average = None
        self.updates = 0

    def on_fit_start(self, loop, model) -> None:
        # New tensors, so the live model has no second holder and updates in place.
        self.average = tree_map(lambda leaf: leaf + 0 if _floating(leaf) else leaf, model)
        self.updates = 0
        self._seen_step = loop.step

    def on_batch_end(self, loop, batch, loss) -> None:
        if loop.step == self._seen_step:
            return  # a micro-batch of gradient accumulation: no update yet
        self._seen_step = loop.step
        self.updates += 1
        n = self.updates
        decay = min(self.decay, (1 + n) / (10 + n)) if self.warmup else self.decay
        self.average = tree_map(
            lambda mean, leaf: mean * decay + leaf * (1.0 - decay) if _floating(leaf) else leaf,
            self.average, loop.model)

    def on_validation_start(self, loop, model):
        return self.average

    def on_fit_end(self, loop, model):
        return self.average if self.apply_at_end else None
