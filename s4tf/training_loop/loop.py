"""``s4tf.TrainingLoop``: fit a model with progress bars, metrics and callbacks.

The loop owns the one reference to the model while it trains, so
``model = optimizer.update(model, gradients)`` can write the parameters in
place (copy-on-write, HOW_IT_WORKS.md): no alias of the model is kept in a local
variable, on the loop object or in a closure while the update runs.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Iterable, Iterator, Sequence

from ..autodiff import value_with_gradient, without_derivative
from ..backends.base import barrier
from ..learning_phase import inference, training
from ..tensor import Tensor
from ..tree import tree_leaves
from .callbacks import Callback
from .display import EpochDisplay
from .metrics import Metric, make_metric

__all__ = ["TrainingLoop"]


def _loss_caller(loss: Callable) -> Callable:
    """Call ``loss`` with the keywords it takes: logits/labels or predicted/expected."""
    try:
        parameters = inspect.signature(loss).parameters
    except (TypeError, ValueError):
        parameters = {}
    if "logits" in parameters and "labels" in parameters:
        return lambda output, labels: loss(logits=output, labels=labels)
    if "predicted" in parameters and "expected" in parameters:
        return lambda output, labels: loss(predicted=output, expected=labels)
    return lambda output, labels: loss(output, labels)


class TrainingLoop:
    """Train a model on batches, with validation, progress bars and callbacks.

    Parameters
    ----------
    training : iterable of (data, labels)
        Iterated once per epoch (``dataset.training``; a
        :class:`s4tf.datasets.Batches` is told the epoch number, so a resumed
        run shuffles exactly as the uninterrupted one).
    validation : iterable of (data, labels), optional
        Evaluated in the inference phase after every epoch (``val_`` logs).
    optimizer
        An s4tf optimizer: ``model = optimizer.update(model, gradients)``.
    loss : callable
        ``loss(logits=, labels=)`` (e.g. ``s4tf.softmax_cross_entropy``),
        ``loss(predicted=, expected=)``, or ``loss(output, labels)``; returns a
        scalar tensor.
    metrics : sequence
        ``"loss"``, ``"accuracy"``, :class:`Metric` instances or
        ``(name, fn(output, labels))`` pairs.
    callbacks : sequence of Callback
    progress : bool
        Show one line per epoch with its loss, metrics and validation metrics:
        a tqdm bar that stays on screen when writing to a terminal (or in a
        notebook; running metrics are read at most twice a second), one plain
        line at the end of each epoch otherwise (a log file, a pipe).
    drop_remainder : bool or None
        Whether to leave a last training batch smaller than the first out of
        each epoch. ``None`` (the default) drops it only on a backend that
        compiles per shape (xla), where it would cost a second compiled step;
        the loop then says so once in its output. On a shuffled data set the
        examples left out differ every epoch. Validation always uses every
        example.
    strategy : s4tf.distributed.Strategy, optional
        Train on several devices (e.g. ``s4tf.distributed.DataParallel()``, on
        the xla backend): :meth:`fit` replicates the model and shards every
        training batch across the strategy's devices; metrics are computed over
        the whole batch. A training batch must divide by the device count (a
        clear error says otherwise); the short last batch is dropped, as
        ``drop_remainder`` says. Validation batches are sharded when they
        divide and otherwise run whole on the replicated model.

    Attributes
    ----------
    epoch, step : int
        The current epoch (from 0) and the number of updates so far.
    history : list of dict
        Every finished epoch's logs.
    stop_training : bool
        Set it (from a callback) to stop after the current batch.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf import datasets, layers, optimizers
    >>> data = datasets.Digits(batch_size=64, seed=0)
    >>> s4tf.random.seed(0)  # the initial weights, for a repeatable example
    >>> model = layers.Sequential(layers.Flatten(), layers.Dense(64, 10))
    >>> loop = s4tf.TrainingLoop(training=data.training, validation=data.validation,
    ...                          optimizer=optimizers.Adam(model, learning_rate=1e-2),
    ...                          loss=s4tf.softmax_cross_entropy, progress=False)
    >>> model = loop.fit(model, epochs=2)
    >>> loop.history[-1]["val_accuracy"] > 0.8
    True
    """

    def __init__(self, *, training: Iterable, validation: Iterable | None = None, optimizer,
                 loss: Callable, metrics: Sequence = ("loss", "accuracy"),
                 callbacks: Sequence[Callback] = (), progress: bool = True,
                 drop_remainder: bool | None = None, strategy=None):
        if not callable(loss):
            raise TypeError(f"loss must be a function such as s4tf.softmax_cross_entropy; "
                            f"received {loss!r}.")
        if not hasattr(optimizer, "update"):
            raise TypeError(f"optimizer must have update(model, gradients) (an s4tf optimizer); "
                            f"received {optimizer!r}.")
        for callback in callbacks:
            if not isinstance(callback, Callback):
                raise TypeError(f"callbacks must be s4tf.callbacks.Callback instances; received "
                                f"{callback!r}. Subclass Callback and override its on_* methods.")
        self.training = training
        self.validation = validation
        self.optimizer = optimizer
        self.loss = loss
        self._call_loss = _loss_caller(loss)
        self.metrics: list[Metric] = [make_metric(m) for m in metrics]
        # Separate accumulators, so validating never disturbs the running training metrics.
        self._validation_metrics: list[Metric] = [copy.copy(m) for m in self.metrics]
        self.callbacks = list(callbacks)
        self.progress = progress
        self.drop_remainder = drop_remainder
        if strategy is not None and not (hasattr(strategy, "replicate")
                                         and hasattr(strategy, "shard")):
            raise TypeError(f"strategy must be an s4tf.distributed strategy (DataParallel, "
                            f"FullySharded); received {strategy!r}.")
        self.strategy = strategy
        self.epoch = 0
        self.step = 0
        self.history: list[dict] = []
        self.stop_training = False
        self._told_about_drop = False

    def fit(self, model, epochs: int, *, initial_epoch: int = 0):
        """Train ``model`` for epochs ``initial_epoch .. epochs - 1`` and return it.

        ``initial_epoch`` resumes a run: pass the epoch that
        :func:`s4tf.load_training_state` returned. A fresh loop then continues
        the step count from the restored optimizer (its ``step``), so per-step
        schedules and callbacks see the numbers of the uninterrupted run, and
        a :class:`s4tf.datasets.Batches` shuffles as it would have in epoch
        ``initial_epoch``: the resumed run is bit-identical to an unbroken one.
        """
        if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
            raise ValueError(f"epochs must be a positive int; received epochs={epochs!r}.")
        if not 0 <= initial_epoch <= epochs:
            raise ValueError(f"initial_epoch must be in [0, epochs={epochs}]; received "
                             f"initial_epoch={initial_epoch!r}.")
        self.stop_training = False
        self._told_about_drop = False
        if initial_epoch > 0 and self.step == 0:
            self.step = _updates_so_far(self.optimizer, initial_epoch)
        if self.strategy is not None:
            model = self.strategy.replicate(model)
        self._fire("on_fit_start", model)
        display = EpochDisplay(self.progress)
        for epoch in range(initial_epoch, epochs):
            self.epoch = epoch
            for metric in self.metrics:
                metric.reset()
            self._fire("on_epoch_start", epoch)
            if hasattr(self.training, "epoch"):
                self.training.epoch = epoch  # the shuffle order of pass ``epoch``
            display.start_epoch(epoch, epochs, _length(self.training))
            batches = _same_size_batches(self.training, self.drop_remainder,
                                         lambda short, full: self._dropped(display, short, full))
            shown: dict = {}  # the running metrics as of the previous step
            for batch, (data, labels) in enumerate(batches):
                if self.strategy is not None:
                    data, labels = self.strategy.shard((data, labels))
                self._fire("on_batch_start", batch)
                with training():
                    loss_value, output, gradients = self._gradient(model, data, labels)
                for callback in self.callbacks:
                    replaced = callback.on_update_start(self, gradients)
                    if replaced is not None:
                        gradients = replaced
                # ``model`` is this frame's only reference: the update may be in place.
                model = self.optimizer.update(model, gradients)
                del gradients
                # Before the barrier, so the metric sums join this step's compiled
                # graph: every step's graph is then the same (lazy backend).
                for metric in self.metrics:
                    metric.update(loss_value, output, labels)
                del output
                barrier()
                self.step += 1
                self._fire("on_batch_end", batch, loss_value)
                # A live bar reads the metrics as of the previous step: that waits for
                # the previous step only, so the device runs this one (the barrier
                # returned at its launch) while the next is recorded. The epoch's
                # line reads the final sums, exactly.
                display.advance(lambda shown=shown: {name: read() for name, read in shown.items()})
                shown = {metric.name: metric.snapshot() for metric in self.metrics}
                if self.stop_training:
                    break
            batches.close()
            logs = self._results(self.metrics)
            if self.validation is not None:
                logs.update({f"val_{k}": v for k, v in self.evaluate(model, self.validation).items()})
            display.end_epoch(logs)
            self.history.append(logs)
            self._fire("on_epoch_end", epoch, logs, model)
            if self.stop_training:
                break
        for callback in self.callbacks:
            replaced = callback.on_fit_end(self, model)
            if replaced is not None:
                model = replaced
        return model

    def _gradient(self, model, data, labels):
        kept = {}

        def objective(m):
            output = m(data)
            kept["output"] = without_derivative(output)  # a plain tensor, no tape
            return self._call_loss(output, labels)

        loss_value, gradients = value_with_gradient(model, of=objective)
        return without_derivative(loss_value), kept.pop("output"), gradients

    def evaluate(self, model, batches: Iterable) -> dict:
        """Metrics of ``model`` over ``batches`` in the inference phase.

        Examples
        --------
        >>> # loop.evaluate(model, data.validation) -> {"loss": 0.21, "accuracy": 0.94}
        """
        metrics = self._validation_metrics or [make_metric("loss")]
        for metric in metrics:
            metric.reset()
        shown = EpochDisplay(self.progress).validation(batches, _length(batches))
        with inference():
            for data, labels in shown:
                if self.strategy is not None and _divides(data, len(self.strategy.devices)):
                    data, labels = self.strategy.shard((data, labels))
                output = model(data)
                loss_value = self._call_loss(output, labels)
                for metric in metrics:
                    metric.update(loss_value, output, labels)
        return self._results(metrics)

    def _dropped(self, display: EpochDisplay, short: int, full: int) -> None:
        display.shorten()
        if not self._told_about_drop:
            self._told_about_drop = True
            display.note(
                f"TrainingLoop: the last training batch of each epoch ({short} examples, "
                f"fewer than {full}) is left out on this backend, so every step has the same "
                "shapes and compiles once; pass drop_remainder=False to train on it (one more "
                "compiled step) or make the data set size a multiple of the batch size."
            )

    def _results(self, metrics: list[Metric]) -> dict:
        return {metric.name: metric.result() for metric in metrics}

    def _fire(self, event: str, *args) -> None:
        for callback in self.callbacks:
            getattr(callback, event)(self, *args)


def _updates_so_far(optimizer, initial_epoch: int) -> int:
    """The step count of a resumed run: the restored optimizer's, which counts every update."""
    step = getattr(optimizer, "step", None)
    if isinstance(step, int) and not isinstance(step, bool):
        return step
    raise TypeError(
        f"fit(initial_epoch={initial_epoch}) resumes a run, which continues the step count of "
        f"the optimizer, but {type(optimizer).__name__} has no integer `step` attribute; give "
        "it one (the number of updates applied), or restore an s4tf optimizer with "
        "s4tf.load_training_state(path, like=model, optimizer=optimizer)."
    )


def _divides(data, devices: int) -> bool:
    size = _batch_size(data, None)
    return size is not None and size % devices == 0


def _batch_size(data, labels) -> int | None:
    for leaf in tree_leaves((labels, data)):
        if isinstance(leaf, Tensor) and leaf.rank:
            return leaf.shape[0]
    return None


def _compiles_per_shape(data, labels) -> bool:
    return any(isinstance(leaf, Tensor) and leaf._backend.compiles_per_shape
               for leaf in tree_leaves((labels, data)))


def _same_size_batches(batches: Iterable, drop: bool | None,
                       on_drop: Callable[[int, int], None]) -> Iterator:
    """``batches``, without a last batch smaller than the first when ``drop`` says so.

    ``drop=None`` decides by the first batch's backend (drop where shapes cost
    compiles). One batch is read ahead, to know which batch is the last.
    ``on_drop(short, full)`` is told the sizes when a batch is left out.
    """
    iterator = iter(batches)
    try:
        held = next(iterator, None)
        if held is None:
            return
        full = _batch_size(*held)
        if drop is None:
            drop = _compiles_per_shape(*held)
        for following in iterator:
            yield held
            held = following
        short = _batch_size(*held)
        if drop and full is not None and short is not None and short < full:
            on_drop(short, full)
            return
        yield held
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:  # a generator (a prefetching pass) stops its thread now
            close()


def _length(iterable) -> int | None:
    try:
        return len(iterable)
    except TypeError:
        return None

