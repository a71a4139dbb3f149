"""On xla, ``TrainingLoop`` captures its own step (``s4tf.xla.compile``) with the traced numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest

import s4tf
from s4tf import layers, optimizers
from s4tf.callbacks import Callback, NonFiniteLossError
from s4tf.datasets import Batches

pytest.importorskip("jax")

EPOCHS = 3


class Net(s4tf.Layer):
    """BatchNorm statistics and Dropout draws: state and randomness a replay must carry."""

    hidden: layers.Dense
    norm: layers.BatchNorm
    drop: layers.Dropout
    out: layers.Dense

    def __init__(self):
        self.hidden = layers.Dense(5, 8, activation=s4tf.tanh)
        self.norm = layers.BatchNorm(8)
        self.drop = layers.Dropout(0.3)
        self.out = layers.Dense(8, 3)

    def __call__(self, x):
        return self.out(self.drop(self.norm(self.hidden(x))))


def data(nan_at: int | None = None):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 5)).astype(np.float32)
    if nan_at is not None:
        x[nan_at] = np.nan
    return Batches.from_arrays(x, rng.integers(0, 3, size=40), batch_size=8, shuffle=True,
                               seed=1, prefetch=False)


def train(capture: bool, training=None, callbacks=(), epochs=EPOCHS):
    with s4tf.backend("xla"):
        s4tf.random.seed(0)
        model = Net()
        training = data() if training is None else training
        loop = s4tf.TrainingLoop(training=training, validation=data(),
                                 optimizer=optimizers.Adam(model, 0.01),
                                 loss=s4tf.softmax_cross_entropy, callbacks=callbacks,
                                 progress=False, capture=capture)
        loop.fit(model, epochs=epochs)
    return loop


@pytest.fixture(scope="module")
def traced_and_captured():
    return train(capture=False), train(capture=True)


def leaves(model):
    return [np.asarray(leaf) for leaf in s4tf.tree_leaves(model)]


def test_the_captured_loop_replays_and_gives_the_traced_numbers(traced_and_captured):
    traced, captured = traced_and_captured
    assert traced._captured is None
    step = captured._captured
    assert step.calls == captured.step == 5 * EPOCHS
    assert step.body_runs == 3  # the capture and its checks on calls 2 and 3; then replays
    assert captured.step == captured.optimizer.step == traced.optimizer.step
    assert captured.history == traced.history  # losses, accuracies, validation: exactly
    for mine, theirs in zip(leaves(captured.model), leaves(traced.model), strict=True):
        np.testing.assert_array_equal(mine, theirs)
    # The running statistics are State cells of the model: the replays updated them.
    assert not np.array_equal(np.asarray(captured.model.norm.running_mean.value), 0)
    for i in range(len(traced.optimizer.paths)):
        mine, theirs = captured.optimizer.slots(i) or {}, traced.optimizer.slots(i) or {}
        assert mine.keys() == theirs.keys()
        for name in mine:
            np.testing.assert_array_equal(np.asarray(mine[name]), np.asarray(theirs[name]))


class Halve(Callback):
    def on_update_start(self, loop, gradients):
        return s4tf.tree_map(lambda g: g * 0.5, gradients)


class LossesBeforeUpdates(Callback):
    """Reads the loss before the update: a captured step would show it after."""

    def __init__(self):
        self.steps = []

    def on_loss(self, loop, batch, loss):
        self.steps.append(loop.step)


@pytest.mark.parametrize("callback", [Halve, LossesBeforeUpdates])
def test_a_callback_that_needs_the_traced_order_keeps_the_step_traced(callback):
    loop = train(capture=True, callbacks=[callback()], epochs=1)
    assert loop._captured is None and loop.step == 5
    if callback is LossesBeforeUpdates:
        assert loop.callbacks[-1].steps == [0, 1, 2, 3, 4]


def test_terminate_on_nan_stops_a_captured_loop_at_the_traced_step():
    # Example 17 is NaN: the batch that holds it comes from a replay in epoch 2.
    def stopped(capture):
        with pytest.raises(NonFiniteLossError) as caught:
            train(capture=capture, training=data(nan_at=17))
        return caught.value

    traced, captured = stopped(False), stopped(True)
    assert (captured.epoch, captured.batch, captured.step) == \
        (traced.epoch, traced.batch, traced.step)
    assert math.isnan(captured.loss)


def test_capture_must_be_a_bool():
    with pytest.raises(TypeError, match="capture must be True or False"):
        s4tf.TrainingLoop(training=[], optimizer=optimizers.SGD([s4tf.ones([1])]),
                          loss=s4tf.softmax_cross_entropy, capture="yes")


def test_a_per_step_schedule_and_an_average_give_the_traced_numbers():
    # The schedule sets the learning rate before every step (a float the replays read);
    # the average reads the updated model after every step.
    def callbacks():
        return [s4tf.callbacks.LearningRateScheduler(lambda step: 0.02 / (1 + step)),
                s4tf.callbacks.ExponentialMovingAverage(decay=0.9)]

    traced = train(capture=False, callbacks=callbacks(), epochs=2)
    captured = train(capture=True, callbacks=callbacks(), epochs=2)
    assert captured._captured.body_runs == 3 and captured.step == 10
    assert captured.optimizer.learning_rate == traced.optimizer.learning_rate
    assert captured.history == traced.history
    for mine, theirs in zip(leaves(captured.model), leaves(traced.model), strict=True):
        np.testing.assert_array_equal(mine, theirs)


def test_a_new_optimizer_is_used_although_the_old_one_is_still_held():
    def fitted(capture):
        loop = train(capture=capture, epochs=1)
        old = loop.optimizer  # still alive: a replay must not update it
        with s4tf.backend("xla"):
            loop.optimizer = optimizers.SGD(loop.model, learning_rate=0.05, momentum=0.5)
            loop.fit(loop.model, epochs=2, initial_epoch=1)
        return loop, old

    (traced, traced_old), (captured, captured_old) = fitted(False), fitted(True)
    assert captured_old.step == traced_old.step == 5
    assert captured.optimizer.step == traced.optimizer.step == 5
    assert captured._captured.optimizer is captured.optimizer
    assert captured.history == traced.history
    for mine, theirs in zip(leaves(captured.model), leaves(traced.model), strict=True):
        np.testing.assert_array_equal(mine, theirs)
