"""Running metrics for the training loop, kept as tensors until displayed.

Each metric accumulates device-side sums (so a lazy backend is not forced to
run at every step) and turns them into a Python float only in :meth:`result`.
"""

from __future__ import annotations

from collections.abc import Callable

from .. import dtypes
from ..ops import one_hot
from ..tensor import Tensor

__all__ = ["Accuracy", "Mean", "Metric", "Precision", "Recall", "make_metric"]


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


def _check_classifier(name: str, output, labels) -> None:
    if output.rank != labels.rank + 1:
        raise ValueError(
            f"{name} needs outputs of shape (batch, classes) and integer labels of shape "
            f"(batch,); received outputs {output.shape} and labels {labels.shape}. Pass "
            "metrics=('loss',) for models that are not classifiers."
        )


class Accuracy(Metric):
    """The fraction of examples whose label is among the ``top_k`` largest outputs.

    ``top_k=1`` (named ``"accuracy"``): the largest output is the label.
    ``top_k=5`` (named ``"top_5_accuracy"``): the label's output is beaten by
    fewer than 5 others (a tie counts for the label).

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.training_loop import Accuracy
    >>> a = Accuracy()
    >>> a.update(None, s4tf.Tensor([[0.0, 1.0]]), s4tf.Tensor([1]))
    >>> a.result()
    1.0
    >>> top2 = Accuracy(top_k=2)
    >>> top2.update(None, s4tf.Tensor([[0.5, 0.3, 0.2], [0.5, 0.3, 0.2]]), s4tf.Tensor([1, 2]))
    >>> top2.name, top2.result()
    ('top_2_accuracy', 0.5)
    """

    name = "accuracy"

    def __init__(self, top_k: int = 1):
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ValueError(f"Accuracy: top_k must be a positive int; received top_k={top_k!r}.")
        self.top_k = top_k
        if top_k != 1:
            self.name = f"top_{top_k}_accuracy"
        super().__init__()

    def batch_value(self, loss, output, labels):
        _check_classifier(self.name, output, labels)
        if self.top_k == 1:
            predicted = output.argmax(axis=-1).astype(labels.dtype)
            correct = (predicted == labels).astype(dtypes.float32).sum()
            return correct, labels.shape[0]
        if self.top_k > output.shape[-1]:
            raise ValueError(f"Accuracy(top_k={self.top_k}) needs at least {self.top_k} "
                             f"classes; the outputs have {output.shape[-1]}.")
        # The label's rank: how many outputs beat it; no sort is needed.
        chosen = one_hot(labels, output.shape[-1], dtype=output.dtype)
        label_output = (output * chosen).sum(axis=-1, keepdims=True)
        beaten_by = (output > label_output).astype(dtypes.float32).sum(axis=-1)
        correct = (beaten_by < float(self.top_k)).astype(dtypes.float32).sum()
        return correct, labels.shape[0]


class _Counts(Metric):
    """Per-class counts of true positives, predictions and labels, summed on the device.

    Precision and recall are ratios of sums, not means of per-example values,
    so they keep three count vectors instead of a running total.
    """

    def __init__(self, class_id: int | None = None, threshold: float = 0.5):
        if class_id is not None and (isinstance(class_id, bool) or not isinstance(class_id, int)
                                     or class_id < 0):
            raise ValueError(f"{type(self).__name__}: class_id must be a class index >= 0 or "
                             f"None (the mean over classes); received class_id={class_id!r}.")
        self.class_id, self.threshold = class_id, float(threshold)
        self.name = type(self).__name__.lower() + ("" if class_id is None else f"_{class_id}")
        super().__init__()

    def reset(self) -> None:
        self._counts = None
        self._count = 0

    def update(self, loss, output, labels) -> None:
        if output.rank == labels.rank or (output.rank == labels.rank + 1 and output.shape[-1] == 1):
            # One score per example: positive above the threshold, as two classes.
            score = output.reshape(labels.shape) if output.rank != labels.rank else output
            predicted = (score > self.threshold).astype(labels.dtype)
            classes = 2
            class_id = 1 if self.class_id is None else self.class_id
        else:
            _check_classifier(self.name, output, labels)
            predicted = output.argmax(axis=-1).astype(labels.dtype)
            classes, class_id = output.shape[-1], self.class_id
        if class_id is not None and class_id >= classes:
            raise ValueError(f"{self.name}: class_id={class_id} but the outputs have "
                             f"{classes} classes.")
        guessed = one_hot(predicted, classes, dtype=dtypes.float32)
        actual = one_hot(labels, classes, dtype=dtypes.float32)
        counts = ((guessed * actual).sum(axis=0), guessed.sum(axis=0), actual.sum(axis=0))
        if class_id is not None:
            counts = tuple(c[class_id] for c in counts)
        self._counts = counts if self._counts is None else tuple(
            a + b for a, b in zip(self._counts, counts, strict=True))
        self._count += labels.shape[0]

    def result(self) -> float:
        return self._ratio(self._counts)

    def snapshot(self):
        counts = self._counts
        return lambda: self._ratio(counts)

    def _ratio(self, counts) -> float:
        if counts is None:
            return float("nan")
        hits, guessed, actual = (c.numpy() for c in counts)
        denominator = guessed if self._over == "predictions" else actual
        # A class never predicted (or never present) scores 0, as scikit-learn's default.
        per_class = hits / denominator.clip(min=1)
        return float(per_class.mean())


class Precision(_Counts):
    """Of the examples predicted as a class, the fraction that are of it.

    For outputs of shape ``(batch, classes)`` the prediction is the largest
    output; ``class_id=c`` gives class ``c``'s precision (named
    ``"precision_c"``), ``None`` the mean over classes (macro average, named
    ``"precision"``; a class never predicted counts 0). For one score per
    example (shape ``(batch,)`` or ``(batch, 1)``) an example is predicted
    positive (class 1) when its score is above ``threshold``: 0.5 for
    probabilities, pass ``threshold=0.0`` for logits.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.training_loop import Precision
    >>> p = Precision(class_id=1)
    >>> p.update(None, s4tf.Tensor([[0.1, 0.9], [0.2, 0.8], [0.7, 0.3]]), s4tf.Tensor([1, 0, 1]))
    >>> p.result()
    0.5
    """

    _over = "predictions"


class Recall(_Counts):
    """Of the examples of a class, the fraction predicted as it (see :class:`Precision`).

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.training_loop import Recall
    >>> r = Recall(class_id=1)
    >>> r.update(None, s4tf.Tensor([[0.1, 0.9], [0.2, 0.8], [0.7, 0.3]]), s4tf.Tensor([1, 0, 1]))
    >>> r.result()
    0.5
    >>> binary = Recall(threshold=0.0)           # one logit per example
    >>> binary.update(None, s4tf.Tensor([2.0, -1.0, 0.5]), s4tf.Tensor([1, 1, 0]))
    >>> binary.result()
    0.5
    """

    _over = "labels"


class _FunctionMetric(Metric):
    def __init__(self, name: str, fn: Callable):
        self.name = name
        self.fn = fn
        super().__init__()

    def batch_value(self, loss, output, labels):
        count = labels.shape[0] if labels.shape else 1
        return self.fn(output, labels) * float(count), count


_BUILTIN = {"loss": Mean, "accuracy": Accuracy, "precision": Precision, "recall": Recall}


def make_metric(spec) -> Metric:
    """A :class:`Metric` from a name, a Metric, or a ``(name, fn)`` pair.

    Names: ``"loss"``, ``"accuracy"``, ``"top_5_accuracy"`` (any k),
    ``"precision"`` and ``"recall"`` (means over classes).

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
        top_k = spec.removeprefix("top_").removesuffix("_accuracy")
        if spec.startswith("top_") and spec.endswith("_accuracy") and top_k.isdigit():
            return Accuracy(top_k=int(top_k))
        if spec not in _BUILTIN:
            raise ValueError(
                f"unknown metric {spec!r}; use one of {sorted(_BUILTIN)}, 'top_5_accuracy' "
                "(any k), a Metric instance, "
                "or a (name, function(output, labels)) pair."
            )
        return _BUILTIN[spec]()
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str) and callable(spec[1]):
        return _FunctionMetric(*spec)
    raise TypeError(
        f"a metric must be a name ('loss', 'accuracy'), a Metric or a (name, function) pair; "
        f"received {spec!r}."
    )
