"""TerminateOnNaN: a NaN or infinite loss stops fit by default, naming where, keeping a usable model."""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest
from tiny_mlp import MLP, eight_examples

import s4tf
from s4tf import optimizers
from s4tf.datasets import Batches
from s4tf.training_loop import NonFiniteLossError, TerminateOnNaN

needs_jax = pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                               reason="the xla backend needs JAX")


def data() -> Batches:
    return eight_examples()


def loss_turning(value: float, at_step: int):
    """The softmax loss, but ``value`` (NaN, inf) for training step ``at_step`` (from 1)."""
    calls = []

    def loss(logits, labels):
        calls.append(1)
        mean = s4tf.softmax_cross_entropy(logits=logits, labels=labels)
        return mean * value if len(calls) == at_step else mean

    return loss


class StopAfter(s4tf.callbacks.Callback):
    def __init__(self, steps):
        self.steps = steps

    def on_batch_end(self, loop, batch, loss):
        if loop.step == self.steps:
            loop.stop_training = True


class EpochEnds(s4tf.callbacks.Callback):
    def __init__(self):
        self.epochs = []

    def on_epoch_end(self, loop, epoch, logs, model):
        self.epochs.append(epoch)


def make_loop(backend, loss=s4tf.softmax_cross_entropy, callbacks=(), **kwargs):
    with s4tf.backend(backend):
        s4tf.random.seed(0)
        model = MLP()
        loop = s4tf.TrainingLoop(training=data(), optimizer=optimizers.Adam(model, 0.05),
                                 loss=loss, callbacks=callbacks, progress=False, **kwargs)
    return loop, model


def fit(backend, epochs=3, **kwargs):
    loop, model = make_loop(backend, **kwargs)
    with s4tf.backend(backend):
        loop.fit(model, epochs=epochs)
    return loop


def assert_same_model(loop, reference):
    assert loop.step == loop.optimizer.step == reference.step
    for mine, theirs in zip(s4tf.tree_leaves(loop.model), s4tf.tree_leaves(reference.model),
                            strict=True):
        np.testing.assert_array_equal(np.asarray(mine), np.asarray(theirs))


@pytest.mark.filterwarnings("ignore:invalid value encountered")  # inf * 0 in the backward pass
@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_on_an_eager_backend_the_bad_step_is_not_applied(value):
    loop, model = make_loop("naive", loss=loss_turning(value, at_step=4))
    with pytest.raises(NonFiniteLossError) as caught:
        loop.fit(model, epochs=3)
    error = caught.value
    assert isinstance(error, FloatingPointError)
    assert (error.epoch, error.batch, error.step) == (1, 1, 4)
    assert error.loss == value or (math.isnan(value) and math.isnan(error.loss))
    message = str(error)
    assert f"loss is {value}" in message and "epoch 2 (loop.epoch == 1), batch 1" in message
    assert "step 4" in message and "not applied" in message and "terminate_on_nan=False" in message
    # The model of step 3, finite, and the optimizer agrees.
    assert_same_model(loop, fit("naive", callbacks=[StopAfter(3)]))
    assert all(np.isfinite(np.asarray(leaf)).all() for leaf in s4tf.tree_leaves(loop.model))


def test_it_is_on_by_default_and_can_be_turned_off():
    loop, _ = make_loop("naive")
    assert [type(c) for c in loop.callbacks] == [TerminateOnNaN]
    own = TerminateOnNaN()
    recorder = EpochEnds()
    loop, _ = make_loop("naive", callbacks=[recorder, own])
    assert loop.callbacks == [recorder, own]  # the caller's, not a second one
    loop = fit("naive", loss=loss_turning(math.nan, at_step=2), terminate_on_nan=False)
    assert loop.callbacks == [] and loop.step == 6
    assert math.isnan(loop.history[0]["loss"])  # trained on, as asked
    with pytest.raises(TypeError, match="terminate_on_nan must be True or False"):
        make_loop("naive", terminate_on_nan="yes")


@needs_jax
def test_on_xla_the_loss_is_read_one_step_late_and_the_message_says_so():
    ends = EpochEnds()
    # The loss turns NaN by counting its calls in Python, which a captured step's replays
    # do not run: the traced step (a NaN from the data stops a captured loop alike).
    loop, model = make_loop("xla", loss=loss_turning(math.nan, at_step=3), callbacks=[ends],
                            capture=False)
    with s4tf.backend("xla"), pytest.raises(NonFiniteLossError) as caught:
        loop.fit(model, epochs=3)
    error = caught.value
    assert (error.epoch, error.batch, error.step) == (1, 0, 3) and math.isnan(error.loss)
    assert "one step late" in str(error) and "step 3" in str(error)
    assert loop.step == loop.optimizer.step == 4  # the bad step and the next were applied
    assert ends.epochs == [0]


@needs_jax
def test_on_xla_the_last_step_of_an_epoch_is_checked_before_other_callbacks_see_the_epoch():
    ends = EpochEnds()
    loop, model = make_loop("xla", loss=loss_turning(math.inf, at_step=2), callbacks=[ends],
                            capture=False)  # as above: the loss counts its calls in Python
    with s4tf.backend("xla"), pytest.raises(NonFiniteLossError) as caught:
        loop.fit(model, epochs=3)
    assert (caught.value.epoch, caught.value.batch, caught.value.step) == (0, 1, 2)
    assert loop.step == loop.optimizer.step == 2
    assert ends.epochs == []  # a checkpoint saver here would not have saved it


@needs_jax
def test_on_xla_checking_adds_no_execution_or_compile():
    fit("xla", terminate_on_nan=False)  # compiles the step once
    counts = {}
    for check in (False, True):
        s4tf.xla.reset_metrics()
        fit("xla", terminate_on_nan=check)
        metrics = s4tf.xla.metrics()
        counts[check] = (metrics["executions"], metrics["compiles"])
    assert counts[True] == counts[False], counts
