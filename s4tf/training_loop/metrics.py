"""Running metrics for the training loop, kept as tensors until displayed.

Each metric accumulates device-side sums (so a lazy backend is not forced to
run at every step) and turns them into a Python float only in :meth:`result`.
"""

from __future__ import annotations

from collections.abc import Callable

from .. import dtypes
from ..tensor import Tensor

__all__ = ["Accuracy", "Mean", "Metric", "make_metric"]


class Metric:
    """A running average over batches; subclasses say what one batch contributes.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.training_loop import Accuracy
    >>> acc = Accuracy()
    >>> acc.update(loss=None, output=s4tf.Tensor([[0.1, 0.9], [0.8, 0.2]]),
    ...            labels=s4tf.Tensor([1, 1]))
    >>> acc.result()
    0.5
    """

    name = "metric"

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        """Forget every batch seen so far."""
        self._total = 0.0
        self._count = 0

    def batch_value(self, loss, output, labels):
        """``(sum over the batch, number of examples)``; tensors stay unread."""
        raise NotImplementedError  # abstract: each metric defines it

    def update(self, loss, output, labels) -> None:
        """Add one batch (``loss`` is the batch's mean loss tensor)."""
        total, count = self.batch_value(loss, output, labels)
        self._total = self._total + total
        self._count += count

    def result(self) -> float:
        """The average so far (reads the accumulated tensor: a sync point)."""
        return _average(self._total, self._count)

    def snapshot(self) -> Callable[[], float]:
        """The average as of now, to read later: waits only for the batches seen so far.

        The training loop's live bar reads the previous step's snapshot after
        launching the next step, so the device runs that step while Python
        records the one after it.

        Examples
        --------
        >>> import s4tf
        >>> from s4tf.training_loop import Mean
        >>> m = Mean()
        >>> m.update(loss=s4tf.Tensor(2.0), output=None, labels=s4tf.Tensor([0]))
        >>> before = m.snapshot()
        >>> m.update(loss=s4tf.Tensor(4.0), output=None, labels=s4tf.Tensor([0]))
        >>> before(), m.result()
        (2.0, 3.0)
        """
        total, count = self._total, self._count
        return lambda: _average(total, count)


def _average(total, count: int) -> float:
    if count == 0:
        return float("nan")
    return float(total.numpy()) / count if isinstance(total, Tensor) else total / count


class Mean(Metric):
    """The example-weighted mean of the loss (``metrics=("loss",)``).

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.training_loop import Mean
    >>> m = Mean()
    >>> m.update(loss=s4tf.Tensor(2.0), output=None, labels=s4tf.Tensor([0, 0]))
    >>> m.update(loss=s4tf.Tensor(5.0), output=None, labels=s4tf.Tensor([0]))
    >>> m.result()
    3.0
    """

    name = "loss"

    def batch_value(self, loss, output, labels):
        count = labels.shape[0] if labels.shape else 1
        return loss * float(count), count


class Accuracy(Metric):
    """The fraction of examples whose largest output is the label (``"accuracy"``).

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.training_loop import Accuracy
    >>> a = Accuracy()
    >>> a.update(None, s4tf.Tensor([[0.0, 1.0]]), s4tf.Tensor([1]))
    >>> a.result()
    1.0
    """

    name = "accuracy"

    def batch_value(self, loss, output, labels):
        if output.rank != labels.rank + 1:
            raise ValueError(
                f"accuracy needs outputs of shape (batch, classes) and integer labels of shape "
                f"(batch,); received outputs {output.shape} and labels {labels.shape}. Pass "
                "metrics=('loss',) for models that are not classifiers."
            )
        predicted = output.argmax(axis=-1).astype(labels.dtype)
        correct = (predicted == labels).astype(dtypes.float32).sum()
        return correct, labels.shape[0]


class _FunctionMetric(Metric):
    def __init__(self, name: str, fn: Callable):
        self.name = name
        self.fn = fn
        super().__init__()

    def batch_value(self, loss, output, labels):
        count = labels.shape[0] if labels.shape else 1
        return self.fn(output, labels) * float(count), count


_BUILTIN = {"loss": Mean, "accuracy": Accuracy}


def make_metric(spec) -> Metric:
    """A :class:`Metric` from ``"loss"``, ``"accuracy"``, a Metric, or a ``(name, fn)`` pair.

    ``fn(output, labels)`` returns the batch's mean as a scalar tensor.

    Examples
    --------
    >>> from s4tf.training_loop import make_metric
    >>> make_metric("accuracy").name
    'accuracy'
    """
    if isinstance(spec, Metric):
        return spec
    if isinstance(spec, str):
        if spec not in _BUILTIN:
            raise ValueError(
                f"unknown metric {spec!r}; use one of {sorted(_BUILTIN)}, a Metric instance, "
                "or a (name, function(output, labels)) pair."
            )
        return _BUILTIN[spec]()
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str) and callable(spec[1]):
        return _FunctionMetric(*spec)
    raise TypeError(
        f"a metric must be a name ('loss', 'accuracy'), a Metric or a (name, function) pair; "
        f"received {spec!r}."
    )
