"""``TrainingLoop``'s step on the xla backend, captured with ``s4tf.xla.compile``.

Tracing a step's ops in Python costs the lazy backend about a millisecond
per hundred ops (LeNet-5's step), every step; a captured step replays its compiled program
instead (see HOW_IT_WORKS.md, "Captured steps"). The loop captures the part
of its step that is a pure function of the model and the batch: the gradient
in the training phase and the optimizer's update. Callbacks, metric sums and
the barrier stay outside, in :meth:`TrainingLoop._step`, so they run on every
call, replays included, with the loss and outputs the program returned.

A step is captured only where that changes nothing a user can see: every
tensor of the model and the batch is on the xla backend, gradients are not
accumulated, no distribution strategy shards the batch, and no callback
overrides ``on_update_start`` (it may replace the gradient, which a replay
never holds) or ``on_loss`` (it would see the loss after the update, not
before). ``TerminateOnNaN`` reads the loss one step late on xla anyway, so
it does not stop a capture.
"""

from __future__ import annotations

from ..capture import compile as capture
from ..cow.interrupts import InterruptsDeferred
from ..learning_phase import training
from ..optimizers.loss_scale import LossScale
from ..optimizers.optax_adapter import Optax
from ..tensor import Tensor
from ..tree import tree_leaves
from .callback import Callback
from .callbacks import TerminateOnNaN

__all__ = ["capturable", "captured_step", "captured_update"]


def capturable(loop, data, labels) -> bool:
    """Whether ``loop``'s step on ``(data, labels)`` can be captured without a visible change.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.training_loop.captured import capturable
    >>> model = s4tf.layers.Dense(3, 2)
    >>> loop = s4tf.TrainingLoop(training=[], optimizer=s4tf.optimizers.SGD(model),
    ...                          loss=s4tf.mean_squared_error, progress=False)
    >>> loop.model = model
    >>> capturable(loop, s4tf.ones([4, 3]), s4tf.ones([4, 2]))   # the naive backend: no
    False
    """
    if not loop.capture or loop.accumulate > 1 or loop.strategy is not None:
        return False
    # Optimizers a captured step cannot follow: a loss scale reads whether the
    # gradients are finite (a value) every step, param_groups keep one set of
    # hyperparameters per group, and optax runs its own jitted update.
    optimizer = loop.optimizer
    if isinstance(optimizer, LossScale | Optax) or getattr(optimizer, "param_groups", None):
        return False
    for callback in loop.callbacks:
        kind = type(callback)
        if kind.on_update_start is not Callback.on_update_start:
            return False
        if kind.on_loss is not Callback.on_loss and kind.on_loss is not TerminateOnNaN.on_loss:
            return False
    tensors = [leaf for leaf in tree_leaves((loop.model, data, labels)) if isinstance(leaf, Tensor)]
    return bool(tensors) and all(leaf._backend.name == "xla" for leaf in tensors)


def captured_step(loop):
    """``step(model, data, labels) -> (model, loss, output)`` for ``loop``, under ``s4tf.xla.compile``.

    The body reads the loop's optimizer and loss at each run; the step's
    ``optimizer`` attribute says which optimizer it was made for (a loop
    given another one makes a new step). ``loss`` and ``output`` carry no
    derivative.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.training_loop.captured import captured_step
    >>> with s4tf.backend("xla"):
    ...     model = s4tf.layers.Dense(3, 2)
    ...     x, y = s4tf.ones([4, 3]), s4tf.zeros([4, 2])
    >>> loop = s4tf.TrainingLoop(training=[(x, y)], optimizer=s4tf.optimizers.SGD(model),
    ...                          loss=s4tf.mean_squared_error, progress=False)
    >>> step = captured_step(loop)
    >>> for _ in range(4):
    ...     model, loss, output = step(model, x, y)
    >>> step.calls, step.body_runs      # the capture, two checks, one replay
    (4, 3)
    """

    def train_step(model, data, labels):
        with training():
            loss_value, output, gradients = loop._gradient(model, data, labels)
        return loop.optimizer.update(model, gradients), loss_value, output

    train_step.__qualname__ = "TrainingLoop's step"
    step = capture(train_step)
    step.optimizer = loop.optimizer
    return step


def captured_update(loop, batch: int, data, labels):
    """Train ``loop.model`` on one batch with the loop's captured step: ``(loss, output)``.

    Fires ``on_loss`` after the update (:func:`capturable` rules out the
    callbacks for which that differs). Like the traced step, the model is read
    from ``loop.model`` and stored back there in one statement, and a Ctrl-C
    waits until both the model and ``loop.step`` are stored.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.training_loop.captured import captured_update
    >>> with s4tf.backend("xla"):
    ...     model = s4tf.layers.Dense(3, 2)
    ...     x, y = s4tf.ones([4, 3]), s4tf.zeros([4, 2])
    >>> loop = s4tf.TrainingLoop(training=[(x, y)], optimizer=s4tf.optimizers.SGD(model),
    ...                          loss=s4tf.mean_squared_error, progress=False)
    >>> loop.model = model
    >>> loss, output = captured_update(loop, 0, x, y)
    >>> loop.step, output.shape
    (1, (4, 2))
    """
    if loop._captured is None or loop._captured.optimizer is not loop.optimizer:
        # A new optimizer gets a step of its own: a capture replays the updates of the
        # optimizer it recorded, which may still be alive (held by the caller).
        loop._captured = captured_step(loop)
    with InterruptsDeferred():
        loop.model, loss_value, output = loop._captured(loop.model, data, labels)
        loop.step += 1
    loop._fire("on_loss", batch, loss_value)
    return loss_value, output
