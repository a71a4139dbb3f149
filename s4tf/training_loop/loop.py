"""``s4tf.TrainingLoop``: fit a model with progress bars, metrics and callbacks.

The loop's ``model`` attribute is the one reference to the model while it
trains, so ``self.model = optimizer.update(self.model, gradients)`` can write
the parameters in place (copy-on-write stores the result back into the place
it read the model from; see HOW_IT_WORKS.md, "Copy-on-write"): no alias of the
model is kept in a local variable or a closure while the update runs. Because
the model lives on the loop, an interrupted ``fit`` (Ctrl-C, a failing
callback) leaves ``loop.model`` holding the model after the last finished
step, matching the optimizer.
"""

from __future__ import annotations

import copy
import inspect
import sys
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from ..autodiff import value_with_gradient, without_derivative
from ..backends.base import barrier
from ..cow.interrupts import InterruptsDeferred
from ..learning_phase import inference, training
from ..ops import concat
from ..optimizers.loss_scale import LossScale
from ..tensor import Tensor
from ..tree import tree_map
from .batches import (
    as_pair,
    batch_size,
    divides,
    length,
    no_batches_message,
    refuse_one_shot,
    same_size_batches,
)
from .callbacks import Callback, TerminateOnNaN
from .captured import capturable, captured_update
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
    terminate_on_nan : bool
        Stop :meth:`fit` with :class:`~s4tf.callbacks.NonFiniteLossError` when
        a training loss is NaN or infinite (default ``True``): the loop adds a
        :class:`~s4tf.callbacks.TerminateOnNaN` in front of ``callbacks``
        unless they hold one already. ``False`` trains on whatever the loss is.
    capture : bool
        On the xla backend, run each training step as a captured step
        (:func:`s4tf.xla.compile`, default ``True``): from the fourth step on
        its compiled program replays without tracing the model in Python,
        with the same numbers. Steps are traced as usual with ``False``, and
        where capturing would change what callbacks see (one overrides
        ``on_loss`` or ``on_update_start``), with ``accumulate > 1`` or a
        ``strategy``. As with :func:`s4tf.xla.compile`, the Python of the
        model's ``__call__`` and of ``loss`` then runs only on the steps that
        trace (the first three, then every 100th): pass ``False`` where it
        has side effects that must happen on every step, or branches on a
        Python value that changes during training (a global flag; a replay
        keeps the path it captured until the next check).

    Attributes
    ----------
    model
        The model being trained: during :meth:`fit`, the model after the last
        finished step (the loop's only reference to it, so updates are in
        place); after ``fit`` stops on an error or Ctrl-C, the model after the
        last finished step, which the optimizer's state matches; after ``fit``
        returns, the model it returned (an update of it outside the loop then
        copies once, as for any model held twice; ``loop.model = None`` lets it
        go). ``None`` before the first fit.
    epoch, step : int
        The current epoch (from 0) and the number of updates so far.
    history : list of dict
        Every finished epoch's logs.
    stop_training : bool
        Set it (from a callback) to stop after the current batch.
    notes : list of str
        The lines callbacks wrote with :meth:`note` (why training stopped, a
        changed learning rate), kept also when ``progress=False`` hides them.

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
                 drop_remainder: bool | None = None, strategy=None,
                 terminate_on_nan: bool = True, capture: bool = True, loss_scale=None):
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
        self.optimizer = _with_loss_scale(optimizer, loss_scale)
        self.loss = loss
        self._call_loss = _loss_caller(loss)
        self.metrics: list[Metric] = [make_metric(m) for m in metrics]
        # Separate accumulators, so validating never disturbs the running training metrics.
        self._validation_metrics: list[Metric] = [copy.copy(m) for m in self.metrics]
        self.callbacks = list(callbacks)
        if not isinstance(terminate_on_nan, bool):
            raise TypeError(f"terminate_on_nan must be True or False; received "
                            f"{terminate_on_nan!r}.")
        if terminate_on_nan and not any(isinstance(c, TerminateOnNaN) for c in callbacks):
            # First, so that no later callback saves or evaluates a non-finite model.
            self.callbacks.insert(0, TerminateOnNaN())
        if not isinstance(capture, bool):
            raise TypeError(f"capture must be True or False; received {capture!r}.")
        self.capture = capture
        self._captured = None  # the captured step, made at the first step that can use it
        self.progress = progress
        self.drop_remainder = drop_remainder
        if strategy is not None and not (hasattr(strategy, "replicate")
                                         and hasattr(strategy, "shard")):
            raise TypeError(f"strategy must be an s4tf.distributed strategy (DataParallel, "
                            f"FullySharded); received {strategy!r}.")
        self.strategy = strategy
        self.model = None
        self.epoch = 0
        self.step = 0
        self.history: list[dict] = []
        self.stop_training = False
        self._told_about_drop = False
        self.notes: list[str] = []
        self._display: EpochDisplay | None = None
        self.accumulate = 1
        self._pending = None  # accumulated gradients: (sum of examples * gradient, examples, batches)

    def note(self, message: str) -> None:
        """Show a one-line ``message`` with the loop's output and keep it in :attr:`notes`.

        Callbacks say here what they did (early stopping stopped, the learning
        rate was lowered); during ``fit`` the line is kept clear of the
        progress bars. ``progress=False`` shows nothing.

        Examples
        --------
        >>> import s4tf
        >>> loop = s4tf.TrainingLoop(training=[], optimizer=s4tf.optimizers.SGD([s4tf.ones([1])]),
        ...                          loss=s4tf.softmax_cross_entropy, progress=False)
        >>> loop.note("stopped early")
        >>> loop.notes
        ['stopped early']
        """
        self.notes.append(message)
        if self._display is not None:
            self._display.note(message)
        elif self.progress:
            print(message, file=sys.stderr, flush=True)

    def fit(self, model, epochs: int, *, initial_epoch: int = 0, accumulate: int = 1):
        """Train ``model`` for epochs ``initial_epoch .. epochs - 1`` and return it.

        ``initial_epoch`` resumes a run: pass the epoch that
        :func:`s4tf.load_training_state` returned. A fresh loop then continues
        the step count from the restored optimizer (its ``step``), so per-step
        schedules and callbacks see the numbers of the uninterrupted run, and
        a :class:`s4tf.datasets.Batches` shuffles as it would have in epoch
        ``initial_epoch``: the resumed run is bit-identical to an unbroken one.

        While it trains, the loop holds the model in :attr:`model` and nowhere
        else, so the optimizer updates it in place. When ``fit`` stops early,
        by Ctrl-C (``KeyboardInterrupt``), an error in a callback or the data,
        or :class:`~s4tf.callbacks.TerminateOnNaN`, it closes its progress bar
        and its pass over the data, then re-raises; ``loop.model`` is then the
        model after the last finished step, and the optimizer matches it:
        ``loop.step`` updates were applied, in this fit and before. A Ctrl-C
        during the optimizer's update is held back until the update is
        applied and stored in ``loop.model``; pressing it again while one is
        held back is not held back (inside the optimizer's own write phase,
        the third press is not), so a hung update stays interruptible.
        Neither ``on_epoch_end`` for the unfinished epoch nor ``on_fit_end``
        runs.

        To keep what was trained::

            try:
                model = loop.fit(model, epochs=10)
            except KeyboardInterrupt:
                model = loop.model          # after loop.step updates
                s4tf.save_training_state("stopped.safetensors", model, loop.optimizer,
                                         epoch=loop.epoch)

        and to go on, call ``loop.fit(loop.model, epochs=10,
        initial_epoch=loop.epoch)`` on the same loop (the step count carries
        on), or restore the file in a new process and pass the epoch it
        returns. Either way the interrupted epoch starts again from its first
        batch, so its finished batches are trained twice; an uninterrupted
        rerun is bit-identical only from an epoch boundary (a file written by
        :class:`~s4tf.callbacks.ModelCheckpoint`).

        ``accumulate=k`` (gradient accumulation) sums the gradients of ``k``
        batches and updates once with their example-weighted mean: for a loss
        that is a mean over the batch, exactly the update of one batch ``k``
        times larger, in the memory of one batch. ``loop.step`` and the
        optimizer count updates; metrics and ``on_batch_*`` events count
        batches. The last group of an epoch may have fewer than ``k``
        batches, and is applied as it is; a group cut short by
        ``stop_training`` or an error is dropped.
        """
        if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
            raise ValueError(f"epochs must be a positive int; received epochs={epochs!r}.")
        if isinstance(accumulate, bool) or not isinstance(accumulate, int) or accumulate < 1:
            raise ValueError(f"accumulate must be a positive int (batches per update); received "
                             f"accumulate={accumulate!r}.")
        self.accumulate = accumulate
        if not 0 <= initial_epoch <= epochs:
            raise ValueError(f"initial_epoch must be in [0, epochs={epochs}]; received "
                             f"initial_epoch={initial_epoch!r}.")
        refuse_one_shot(self.training, "training", epochs - initial_epoch)
        if self.validation is not None:
            refuse_one_shot(self.validation, "validation", epochs - initial_epoch)
        self.stop_training = False
        self._told_about_drop = False
        if initial_epoch > 0 and self.step == 0:
            self.step = _updates_so_far(self.optimizer, initial_epoch)
        if self.strategy is not None:
            model = self.strategy.replicate(model)
        # From here on the loop's attribute is its only reference (see the module docstring).
        self.model, model = model, None
        display = self._display = EpochDisplay(self.progress)
        try:
            self._fire("on_fit_start", self.model)
            for epoch in range(initial_epoch, epochs):
                earlier = epoch > initial_epoch  # an epoch of this fit gave batches before
                self._train_epoch(epoch, epochs, display, earlier)
                logs = self._results(self.metrics)
                if self.validation is not None:
                    results, count = self._evaluate(self._validated_model(), self.validation)
                    if not count:
                        raise ValueError(no_batches_message(self.validation, "validation",
                                                            epoch, earlier))
                    logs.update({f"val_{k}": v for k, v in results.items()})
                display.end_epoch(logs)
                self.history.append(logs)
                self._fire("on_epoch_end", epoch, logs, self.model)
                if self.stop_training:
                    break
        finally:
            display.close()  # a bar left open by an interrupted epoch
            self._display, self._pending = None, None
        for callback in self.callbacks:
            replaced = callback.on_fit_end(self, self.model)
            if replaced is not None:
                self.model = replaced
        return self.model

    def _train_epoch(self, epoch: int, epochs: int, display: EpochDisplay,
                     earlier: bool) -> None:
        """One pass over the training data (``earlier``: an earlier epoch of this fit ran)."""
        self.epoch = epoch
        for metric in self.metrics:
            metric.reset()
        self._fire("on_epoch_start", epoch)
        if hasattr(self.training, "epoch"):
            self.training.epoch = epoch  # the shuffle order of pass ``epoch``
        display.start_epoch(epoch, epochs, length(self.training))
        batches = same_size_batches(self.training, self.drop_remainder,
                                    lambda short, full: self._dropped(display, short, full))
        shown: dict = {}  # the running metrics as of the previous step
        seen = 0
        self._pending = None  # a group is never carried into the next epoch
        try:
            # Gradient accumulation must know an epoch's last batch, to apply a short group.
            numbered = (_with_last(batches) if self.accumulate > 1
                        else ((index, False, pair) for index, pair in enumerate(batches)))
            for batch, last, (data, labels) in numbered:
                seen += 1
                self._step(batch, data, labels, last)
                # A live bar reads the metrics as of the previous step: that waits for
                # the previous step only, so the device runs this one (the barrier
                # returned at its launch) while the next is recorded. The epoch's
                # line reads the final sums, exactly.
                display.advance(lambda shown=shown: {name: read() for name, read in shown.items()})
                shown = {metric.name: metric.snapshot() for metric in self.metrics}
                if self.stop_training:
                    break
        finally:
            batches.close()  # also on an interrupt: a prefetching pass stops its thread
        if not seen:
            raise ValueError(no_batches_message(self.training, "training", epoch, earlier))

    def _step(self, batch: int, data, labels, last: bool = False) -> None:
        """Train on one batch: gradient, update of ``self.model``, metric sums, barrier.

        ``last``: the epoch's last batch (read only when accumulating gradients).
        """
        if self.strategy is not None:
            data, labels = self.strategy.shard((data, labels))
        self._fire("on_batch_start", batch)
        if capturable(self, data, labels):
            loss_value, output = captured_update(self, batch, data, labels)
        else:
            with training():
                loss_value, output, gradients = self._gradient(self.model, data, labels)
            self._fire("on_loss", batch, loss_value)
            if self.accumulate > 1:
                gradients = self._accumulated(gradients, batch_size(data, labels) or 1, last)
            if gradients is not None:
                for callback in self.callbacks:
                    replaced = callback.on_update_start(self, gradients)
                    if replaced is not None:
                        gradients = replaced
                # The model is read from and stored back into the loop's attribute in one
                # statement, so the update may be in place. Ctrl-C waits until both the
                # update and the step count are stored: ``loop.model`` and the optimizer
                # then always agree (an update interrupted on its own would be applied
                # and lost if the signal landed between its return and the store).
                with InterruptsDeferred():
                    self.model = self.optimizer.update(self.model, gradients)
                    self.step += 1
            del gradients
        # Before the barrier, so the metric sums join this step's compiled
        # graph: every step's graph is then the same (lazy backend).
        for metric in self.metrics:
            metric.update(loss_value, output, labels)
        del output
        barrier()
        self._fire("on_batch_end", batch, loss_value)

    def _accumulated(self, gradients, examples: int, last: bool):
        """Add a batch's gradient to the group; the group's mean when it is complete, else None.

        Each batch's gradient is weighted by its size, so the mean is the
        gradient of the mean loss over all the group's examples.
        """
        weighted = tree_map(lambda g: g * float(examples), gradients)
        if self._pending is None:
            total, count, batches = weighted, examples, 1
        else:
            total, count, batches = self._pending
            total = tree_map(lambda a, b: a + b, total, weighted)
            count, batches = count + examples, batches + 1
        if batches < self.accumulate and not last:
            self._pending = (total, count, batches)
            return None
        self._pending = None
        return tree_map(lambda g: g * (1.0 / count), total)

    def _validated_model(self):
        """The model validation evaluates: the live one unless a callback gives another (an average)."""
        evaluated = self.model
        for callback in self.callbacks:
            replaced = callback.on_validation_start(self, evaluated)
            if replaced is not None:
                evaluated = replaced
        return evaluated

    def predict(self, model, data, *, batch_size: int = 256):
        """``model``'s outputs over ``data``, in the inference phase, joined along the batch.

        Parameters
        ----------
        model
            Any model (the loop's own, ``loop.model``, is not assumed).
        data
            A tensor or NumPy array of inputs (run ``batch_size`` at a time),
            or an iterable of batches: ``(data, labels)`` pairs (a
            :class:`s4tf.datasets.Batches`; the labels are ignored) or input
            tensors.

        Returns
        -------
        Tensor
            The outputs, one row per example, in order (a tuple or list of
            tensors for a model that returns several).

        Examples
        --------
        >>> import s4tf
        >>> from s4tf import datasets, layers, optimizers
        >>> data = datasets.Digits(batch_size=64, seed=0)
        >>> model = layers.Sequential(layers.Flatten(), layers.Dense(64, 10))
        >>> loop = s4tf.TrainingLoop(training=data.training, optimizer=optimizers.SGD(model),
        ...                          loss=s4tf.softmax_cross_entropy, progress=False)
        >>> loop.predict(model, data.validation).shape
        (360, 10)
        >>> loop.predict(model, s4tf.zeros([3, 8, 8, 1])).argmax(axis=-1).shape
        (3,)
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"predict: batch_size must be a positive int; received "
                             f"batch_size={batch_size!r}.")
        if isinstance(data, np.ndarray):
            data = Tensor(data)
        if isinstance(data, Tensor):
            batches = (data[start:start + batch_size]
                       for start in range(0, max(data.shape[0], 1), batch_size))
        else:
            batches = (item[0] if isinstance(item, (tuple, list)) and len(item) == 2 else item
                       for item in data)
        outputs = []
        with inference():
            for inputs in batches:
                if isinstance(inputs, np.ndarray):
                    inputs = Tensor(inputs)
                outputs.append(tree_map(without_derivative, model(inputs)))
        if not outputs:
            raise ValueError(f"predict: the data ({type(data).__name__}) gave no batches.")
        return tree_map(lambda *parts: concat(list(parts), axis=0), *outputs)

    def _gradient(self, model, data, labels):
        kept = {}

        scaling = self.optimizer if isinstance(self.optimizer, LossScale) else None

        def objective(m):
            output = m(data)
            kept["output"] = without_derivative(output)  # a plain tensor, no tape
            loss = self._call_loss(output, labels)
            if scaling is None:
                return loss
            kept["loss"] = without_derivative(loss)  # unscaled, for the metrics and callbacks
            return scaling.scale_loss(loss)

        loss_value, gradients = value_with_gradient(model, of=objective)
        loss_value = kept.pop("loss", loss_value)
        return without_derivative(loss_value), kept.pop("output"), gradients

    def evaluate(self, model, batches: Iterable) -> dict:
        """Metrics of ``model`` over ``batches`` in the inference phase.

        Examples
        --------
        >>> # loop.evaluate(model, data.validation) -> {"loss": 0.21, "accuracy": 0.94}
        """
        return self._evaluate(model, batches)[0]

    def _evaluate(self, model, batches: Iterable) -> tuple[dict, int]:
        """:meth:`evaluate`'s metrics, and how many batches they saw."""
        metrics = self._validation_metrics or [make_metric("loss")]
        for metric in metrics:
            metric.reset()
        count = 0
        shown = EpochDisplay(self.progress).validation(batches, length(batches))
        try:
            with inference():
                for index, batch in enumerate(shown):
                    data, labels = as_pair(batch, "validation", index)
                    count += 1
                    if self.strategy is not None and divides(data, len(self.strategy.devices)):
                        data, labels = self.strategy.shard((data, labels))
                    output = model(data)
                    loss_value = self._call_loss(output, labels)
                    for metric in metrics:
                        metric.update(loss_value, output, labels)
        finally:
            if shown is not batches:  # the display's counting pass: its bar closes now
                shown.close()
        return self._results(metrics), count

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


def _with_loss_scale(optimizer, loss_scale):
    """``optimizer`` wrapped in a LossScale as ``loss_scale`` asks (see TrainingLoop)."""
    if loss_scale is None or isinstance(optimizer, LossScale):
        return optimizer
    if loss_scale == "dynamic":
        return LossScale(optimizer)
    if isinstance(loss_scale, int | float) and not isinstance(loss_scale, bool):
        return LossScale(optimizer, initial=float(loss_scale), dynamic=False)
    raise ValueError(f"loss_scale must be None, \"dynamic\" or a positive number; received "
                     f"loss_scale={loss_scale!r}.")


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


def _with_last(batches: Iterable):
    """``(index, is_last, item)`` for each item: reads one item ahead."""
    iterator = iter(batches)
    held = next(iterator, _END)
    index = 0
    while held is not _END:
        following = next(iterator, _END)
        yield index, following is _END, held
        held, index = following, index + 1


_END = object()
