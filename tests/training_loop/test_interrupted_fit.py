"""An interrupted fit keeps what was trained: ``loop.model`` and the optimizer after k steps."""

from __future__ import annotations

import importlib.util
import io
import os
import signal
import sys
import threading

import numpy as np
import pytest
from tiny_mlp import MLP, eight_examples

import s4tf
from s4tf import optimizers
from s4tf.datasets import Batches

pytestmark = pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                                reason="signals are delivered to the main thread only")

BACKENDS = ["naive", pytest.param("xla", marks=pytest.mark.skipif(
    importlib.util.find_spec("jax") is None, reason="the xla backend needs JAX"))]
STEPS_BEFORE = 3  # updates finished when the interrupt comes (epoch 1, batch 1)


@pytest.fixture(autouse=True)
def python_handles_sigint():
    # A shell starts background jobs with SIGINT ignored; Ctrl-C here means Python's handler.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def data() -> Batches:
    return eight_examples(shuffle=True, seed=0)


class StopAfter(s4tf.callbacks.Callback):
    def __init__(self, steps):
        self.steps = steps

    def on_batch_end(self, loop, batch, loss):
        if loop.step == self.steps:
            loop.stop_training = True


def run(backend, callbacks=(), training=None, loss=s4tf.softmax_cross_entropy,
        optimizer=optimizers.Adam, progress=False, capture=True):
    """A fresh seeded model, optimizer and loop, fitted for 3 epochs of 2 steps."""
    with s4tf.backend(backend):
        s4tf.random.seed(0)
        model = MLP()
        loop = s4tf.TrainingLoop(training=data() if training is None else training,
                                 optimizer=optimizer(model, learning_rate=0.05), loss=loss,
                                 callbacks=callbacks, progress=progress, capture=capture)
        before = [np.asarray(leaf) for leaf in s4tf.tree_leaves(model)]
        try:
            loop.fit(model, epochs=3)
        finally:
            # The caller's model is never the trained one: it stays as it was.
            for old, leaf in zip(before, s4tf.tree_leaves(model), strict=True):
                np.testing.assert_array_equal(old, np.asarray(leaf))
    return loop


@pytest.fixture(scope="module", params=BACKENDS)
def backend_and_reference(request):
    """The backend, and ``reference(k)``: a loop stopped cleanly after ``k`` updates."""
    loops = {}

    def reference(steps):
        if steps not in loops:
            loops[steps] = run(request.param, callbacks=[StopAfter(steps)])
        return loops[steps]

    return request.param, reference


def assert_trained_for(loop, reference, steps):
    reference = reference(steps)
    assert loop.step == loop.optimizer.step == steps
    assert loop.epoch == steps // 2
    for mine, theirs in zip(s4tf.tree_leaves(loop.model), s4tf.tree_leaves(reference.model),
                            strict=True):
        np.testing.assert_array_equal(np.asarray(mine), np.asarray(theirs))
    mine, theirs = loop.optimizer.state_dict(), reference.optimizer.state_dict()
    assert mine.keys() == theirs.keys()
    for key in mine:
        np.testing.assert_array_equal(mine[key], theirs[key], err_msg=key)


class InterruptAtBatchStart(s4tf.callbacks.Callback):
    def on_batch_start(self, loop, batch):
        if loop.step == STEPS_BEFORE:
            raise KeyboardInterrupt


class Interrupting:
    """Data whose pass raises KeyboardInterrupt (as Ctrl-C in a loader would) at a batch."""

    epoch = 0  # set by the loop: the inner Batches shuffles as in that pass

    def __init__(self, inner, at: int):
        self.inner, self.at, self.served = inner, at, 0

    def __len__(self):
        return len(self.inner)

    def __iter__(self):
        self.inner.epoch = self.epoch
        for batch in self.inner:
            if self.served == self.at:
                raise KeyboardInterrupt
            self.served += 1
            yield batch


def interrupting_loss(how: str):
    """The softmax loss, interrupted inside the forward pass of step ``STEPS_BEFORE + 1``."""
    calls = []

    def loss(logits, labels):
        calls.append(1)
        if len(calls) == STEPS_BEFORE + 1:
            if how == "raise":
                raise KeyboardInterrupt
            os.kill(os.getpid(), signal.SIGINT)  # a real Ctrl-C, delivered at the next bytecode
        return s4tf.softmax_cross_entropy(logits=logits, labels=labels)

    return loss


class InterruptedAdam(optimizers.Adam):
    """Adam whose rule sends SIGINT (a real Ctrl-C) while writing update ``STEPS_BEFORE``."""

    def update_parameter(self, param, grad, state, constants):
        super().update_parameter(param, grad, state, constants)
        if self.step == STEPS_BEFORE and not getattr(self, "interrupted", False):
            self.interrupted = True
            signal.raise_signal(signal.SIGINT)


@pytest.mark.parametrize("where", ["callback", "forward", "sigint-in-forward"])
def test_an_interrupt_before_the_update_keeps_the_model_of_the_last_finished_step(
        backend_and_reference, where):
    backend, reference = backend_and_reference
    kwargs = {
        "callback": {"callbacks": [InterruptAtBatchStart()]},
        # A captured step's replays run no Python loss: one that interrupts itself needs
        # the traced step.
        "forward": {"loss": interrupting_loss("raise"), "capture": False},
        "sigint-in-forward": {"loss": interrupting_loss("sigint"), "capture": False},
    }[where]
    with pytest.raises(KeyboardInterrupt) as caught:
        run(backend, **kwargs)
    assert_trained_for(_loop_of(caught), reference, STEPS_BEFORE)


def test_an_interrupt_in_the_data_keeps_the_model_of_the_last_finished_step(
        backend_and_reference):
    backend, reference = backend_and_reference
    with pytest.raises(KeyboardInterrupt) as caught:
        # The loop reads one batch ahead: fetching the 4th batch comes before the 3rd step.
        run(backend, training=Interrupting(data(), at=3))
    assert_trained_for(_loop_of(caught), reference, 2)


def test_ctrl_c_during_the_update_is_raised_once_the_update_is_stored(backend_and_reference):
    backend, reference = backend_and_reference
    with pytest.raises(KeyboardInterrupt) as caught:
        run(backend, optimizer=InterruptedAdam)
    loop = _loop_of(caught)
    assert loop.optimizer.interrupted
    assert_trained_for(loop, reference, STEPS_BEFORE)  # update 3 applied, not lost


class LateSignalAdam(optimizers.Adam):
    """Adam that gets a SIGINT after update ``STEPS_BEFORE`` returned, before it is stored.

    The update's own deferral is over by then: only the loop can keep the
    finished update from being dropped while the optimizer counts it.
    """

    def update(self, model, grads, *, consume=True):
        new = super().update(model, grads, consume=consume)
        if self.step == STEPS_BEFORE:
            signal.raise_signal(signal.SIGINT)
        return new


def test_ctrl_c_between_the_update_and_its_store_keeps_them_together(backend_and_reference):
    backend, reference = backend_and_reference
    with pytest.raises(KeyboardInterrupt) as caught:
        run(backend, optimizer=LateSignalAdam)
    assert_trained_for(_loop_of(caught), reference, STEPS_BEFORE)


def test_an_interrupted_barrier_leaves_the_recorded_step_applied(backend_and_reference,
                                                                 monkeypatch):
    from s4tf.training_loop import loop as loop_module

    backend, reference = backend_and_reference
    calls = []
    real = loop_module.barrier

    def barrier():
        calls.append(1)
        if len(calls) == STEPS_BEFORE:
            raise KeyboardInterrupt  # before the step runs (xla: still pending)
        real()

    monkeypatch.setattr(loop_module, "barrier", barrier)
    with pytest.raises(KeyboardInterrupt) as caught:
        run(backend)
    assert_trained_for(_loop_of(caught), reference, STEPS_BEFORE)


def _loop_of(caught) -> s4tf.TrainingLoop:
    """The loop ``run`` made, from the traceback's frames."""
    tb = caught.value.__traceback__
    while tb is not None:
        found = tb.tb_frame.f_locals.get("loop")
        if isinstance(found, s4tf.TrainingLoop):
            return found
        tb = tb.tb_next
    raise AssertionError("no TrainingLoop in the traceback")


def test_fit_goes_on_from_loop_model_after_an_interrupt(backend_and_reference):
    backend, reference = backend_and_reference
    with pytest.raises(KeyboardInterrupt) as caught:
        run(backend, callbacks=[InterruptAtBatchStart()])
    loop = _loop_of(caught)
    loop.callbacks = [c for c in loop.callbacks if not isinstance(c, InterruptAtBatchStart)]
    with s4tf.backend(backend):
        trained = loop.fit(loop.model, epochs=3, initial_epoch=loop.epoch)
    # Epoch 1 starts again from its first batch: 3 updates before, 4 after.
    assert loop.step == loop.optimizer.step == STEPS_BEFORE + 4
    assert trained is loop.model and len(loop.history) == 3  # epoch 0, then epochs 1 and 2


def test_an_interrupt_closes_the_live_progress_bar(monkeypatch):
    from tqdm import tqdm

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stderr", Terminal())
    open_before = len(tqdm._instances)
    with pytest.raises(KeyboardInterrupt) as caught:
        run("naive", callbacks=[InterruptAtBatchStart()], progress=True)
    assert _loop_of(caught).step == STEPS_BEFORE
    # The traceback keeps the display alive: only closing it ends the bar.
    assert len(tqdm._instances) == open_before


def test_an_interrupt_stops_the_prefetching_thread_of_the_pass():
    rng = np.random.default_rng(0)
    prefetching = Batches.from_arrays(rng.normal(size=(64, 3)).astype(np.float32),
                                      rng.integers(0, 2, size=64), batch_size=4, prefetch=True)
    threads_before = threading.active_count()
    with pytest.raises(KeyboardInterrupt) as caught:
        run("naive", callbacks=[InterruptAtBatchStart()], training=prefetching)
    assert _loop_of(caught).step == STEPS_BEFORE
    # The traceback keeps the pass alive: only closing it stops (and joins) its thread.
    assert threading.active_count() == threads_before
