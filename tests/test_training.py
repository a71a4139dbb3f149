"""s4tf.TrainingLoop: events, callbacks, in-place updates, resume, and real training."""

from __future__ import annotations

import csv

import numpy as np
import pytest

import s4tf
from s4tf import datasets, layers, optimizers
from s4tf.datasets import Batches
from s4tf.learning_phase import current_learning_phase


class MLP(s4tf.Layer):
    hidden: layers.Dense
    out: layers.Dense

    def __init__(self, inputs: int = 64, width: int = 32, classes: int = 10):
        self.hidden = layers.Dense(inputs, width, activation=s4tf.relu)
        self.out = layers.Dense(width, classes)

    def __call__(self, x):
        return self.out(self.hidden(x.reshape([x.shape[0], -1])))


def tiny_data(n: int = 8, batch_size: int = 4, seed: int = 0) -> Batches:
    rng = np.random.default_rng(seed)
    return Batches.from_arrays(rng.normal(size=(n, 3)).astype(np.float32),
                               rng.integers(0, 2, size=n), batch_size=batch_size,
                               shuffle=True, seed=seed, prefetch=False)


def tiny_loop(model, callbacks=(), **kwargs) -> s4tf.TrainingLoop:
    return s4tf.TrainingLoop(training=tiny_data(), validation=tiny_data(seed=1),
                             optimizer=optimizers.SGD(model, learning_rate=0.1),
                             loss=s4tf.softmax_cross_entropy, callbacks=callbacks,
                             progress=False, **kwargs)


class Recorder(s4tf.callbacks.Callback):
    def __init__(self):
        self.events = []

    def on_fit_start(self, loop, model):
        self.events.append("fit_start")

    def on_epoch_start(self, loop, epoch):
        self.events.append(f"epoch_start {epoch}")

    def on_batch_start(self, loop, batch):
        self.events.append(f"batch_start {batch}")

    def on_update_start(self, loop, gradients):
        assert isinstance(gradients, MLP.TangentVector)
        self.events.append("update_start")

    def on_batch_end(self, loop, batch, loss):
        assert isinstance(loss, s4tf.Tensor) and loss.shape == ()
        self.events.append(f"batch_end {batch}")

    def on_epoch_end(self, loop, epoch, logs, model):
        assert set(logs) == {"loss", "accuracy", "val_loss", "val_accuracy"}
        self.events.append(f"epoch_end {epoch}")

    def on_fit_end(self, loop, model):
        self.events.append("fit_end")


def test_events_fire_in_order():
    s4tf.random.seed(0)
    recorder = Recorder()
    loop = tiny_loop(MLP(inputs=3, width=4, classes=2), callbacks=[recorder])
    loop.fit(MLP(inputs=3, width=4, classes=2), epochs=2)
    per_epoch = lambda e: [f"epoch_start {e}", "batch_start 0", "update_start", "batch_end 0",
                           "batch_start 1", "update_start", "batch_end 1", f"epoch_end {e}"]
    assert recorder.events == ["fit_start", *per_epoch(0), *per_epoch(1), "fit_end"]
    assert loop.step == 4 and len(loop.history) == 2


def test_update_start_may_replace_the_gradient_and_barrier_runs_after_each_update(monkeypatch):
    from s4tf.training_loop import loop as loop_module

    calls = []
    monkeypatch.setattr(loop_module, "barrier", lambda: calls.append("barrier"))

    class ZeroGradient(s4tf.callbacks.Callback):
        def on_update_start(self, loop, gradients):
            return s4tf.tree_map(lambda g: g * 0.0, gradients)

    s4tf.random.seed(0)
    model = MLP(inputs=3, width=4, classes=2)
    before = [leaf.numpy().copy() for leaf in s4tf.tree_leaves(model)]
    trained = tiny_loop(model, callbacks=[ZeroGradient()]).fit(model, epochs=2)
    for old, new in zip(before, s4tf.tree_leaves(trained), strict=True):
        np.testing.assert_array_equal(old, new.numpy())
    assert calls == ["barrier"] * 4


def test_a_callback_can_stop_training():
    class StopAtThree(s4tf.callbacks.Callback):
        def on_batch_end(self, loop, batch, loss):
            if loop.step == 3:
                loop.stop_training = True

    model = MLP(inputs=3, width=4, classes=2)
    loop = tiny_loop(model, callbacks=[StopAtThree()])
    loop.fit(model, epochs=10)
    assert loop.step == 3 and len(loop.history) == 2


def test_the_learning_phase_is_training_for_steps_and_inference_for_validation():
    phases = []

    class Probe(s4tf.Layer):
        inner: MLP

        def __call__(self, x):
            phases.append(current_learning_phase())
            return self.inner(x)

    model = Probe(MLP(inputs=3, width=4, classes=2))
    tiny_loop(model).fit(model, epochs=1)
    assert phases == ["training", "training", "inference", "inference"]


def test_parameter_buffers_keep_their_identity_across_steps(monkeypatch):
    """The loop holds the only reference, so the optimizer updates in place.

    Any outside reference (even a weak one) to a buffer would rightly force a
    copy, so the test watches the optimizer's own decision instead of holding
    the buffers.
    """
    from s4tf.cow import engine

    decisions = []
    analyze = engine.analyze

    def watched(model, root_unique):
        found = analyze(model, root_unique)
        decisions.append(list(found.in_place))
        return found

    monkeypatch.setattr(engine, "analyze", watched)
    with s4tf.backend("naive"):
        s4tf.random.seed(0)
        model = MLP(inputs=3, width=4, classes=2)
        before = [leaf.numpy().copy() for leaf in s4tf.tree_leaves(model)]
        loop = tiny_loop(model)
        trained = loop.fit(model, epochs=3)
    # The first update copies (this test still holds `model`); every later one is in place.
    assert len(decisions) == 6
    assert not all(decisions[0])
    assert all(all(d) for d in decisions[1:]), decisions
    for first, leaf in zip(before, s4tf.tree_leaves(trained), strict=True):
        assert not np.array_equal(first, leaf.numpy()), "the parameters did not change"


def test_csv_logger_checkpoint_saver_and_learning_rate_schedule(tmp_path):
    rates = []

    class RateProbe(s4tf.callbacks.Callback):
        def on_update_start(self, loop, gradients):
            rates.append(loop.optimizer.learning_rate)

    model = MLP(inputs=3, width=4, classes=2)
    callbacks = [
        s4tf.callbacks.LearningRateScheduler(lambda step: 0.1 / (1 + step)),
        RateProbe(),
        s4tf.callbacks.CSVLogger(tmp_path / "log.csv"),
        s4tf.callbacks.ModelCheckpoint(str(tmp_path / "model-{epoch}.safetensors")),
    ]
    loop = tiny_loop(model, callbacks=callbacks)
    trained = loop.fit(model, epochs=2)
    assert rates == pytest.approx([0.1, 0.05, 0.1 / 3, 0.025])
    with open(tmp_path / "log.csv") as file:
        rows = list(csv.DictReader(file))
    assert [row["epoch"] for row in rows] == ["1", "2"]
    assert float(rows[1]["val_loss"]) == pytest.approx(loop.history[1]["val_loss"])
    saved = s4tf.load(tmp_path / "model-2.safetensors")
    for a, b in zip(s4tf.tree_leaves(saved), s4tf.tree_leaves(trained), strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_early_stopping_stops_and_restores_the_best_model():
    class Scripted(s4tf.callbacks.Callback):
        """Overwrite val_loss with a scripted curve: best at epoch 1 (0-based)."""

        def __init__(self):
            self.curve = iter([3.0, 1.0, 2.0, 2.5, 0.5])

        def on_epoch_end(self, loop, epoch, logs, model):
            logs["val_loss"] = next(self.curve)

    stop = s4tf.callbacks.EarlyStopping(monitor="val_loss", patience=1, restore_best=True)
    keep = []

    class KeepEpochOne(s4tf.callbacks.Callback):
        def on_epoch_end(self, loop, epoch, logs, model):
            if epoch == 1:
                keep.extend(leaf.numpy().copy() for leaf in s4tf.tree_leaves(model))

    model = MLP(inputs=3, width=4, classes=2)
    loop = tiny_loop(model, callbacks=[Scripted(), KeepEpochOne(), stop])
    best = loop.fit(model, epochs=5)
    assert len(loop.history) == 4 and stop.best_epoch == 1 and stop.stopped_epoch == 3
    for kept, leaf in zip(keep, s4tf.tree_leaves(best), strict=True):
        np.testing.assert_array_equal(kept, leaf.numpy())


class ScriptedLogs(s4tf.callbacks.Callback):
    """Overwrite one metric of each epoch's logs with a scripted curve."""

    def __init__(self, name, curve):
        self.name, self.curve = name, iter(curve)

    def on_epoch_end(self, loop, epoch, logs, model):
        logs[self.name] = next(self.curve)


@pytest.mark.parametrize(("monitor", "curve", "stopped"), [
    # Binary-exact steps: a change of exactly min_delta (0.25) is not an improvement.
    ("val_loss", [2.0, 1.5, 1.25, 1.0, 1.0], 2),      # 2.0 -> 1.5 improves; 1.5 -> 1.25 does not
    ("val_loss", [2.0, 1.875, 1.0, 1.0, 1.0], 1),     # less than min_delta lower: no improvement
    ("val_accuracy", [0.25, 0.625, 0.75, 1.0, 1.0], 2),  # 0.625 -> 0.75: less than min_delta
    ("val_accuracy", [0.25, 0.5, 1.0, 1.0, 1.0], 1),     # exactly min_delta higher: no
])
@pytest.mark.parametrize("min_delta", [0.25, -0.25])  # the sign is ignored, as in Keras
def test_early_stopping_counts_only_improvements_larger_than_min_delta(monitor, curve, stopped,
                                                                       min_delta):
    stop = s4tf.callbacks.EarlyStopping(monitor=monitor, patience=0, min_delta=min_delta)
    model = MLP(inputs=3, width=4, classes=2)
    loop = tiny_loop(model, callbacks=[ScriptedLogs(monitor, curve), stop])
    loop.fit(model, epochs=5)
    assert stop.stopped_epoch == stopped and len(loop.history) == stopped + 1


def _digits_run(tmp_path, epochs, resume_from=None, state_path=None):
    data = datasets.Digits(batch_size=64, seed=0, prefetch=False)
    s4tf.random.seed(0)
    model = MLP()
    optimizer = optimizers.Adam(model, learning_rate=1e-2)
    initial_epoch = 0
    if resume_from is not None:
        model, initial_epoch, _ = s4tf.load_training_state(resume_from, like=model,
                                                           optimizer=optimizer)
    callbacks = []
    if state_path is not None:
        callbacks.append(s4tf.callbacks.ModelCheckpoint(state_path, training_state=True))
    loop = s4tf.TrainingLoop(training=data.training, validation=data.validation,
                             optimizer=optimizer, loss=s4tf.softmax_cross_entropy,
                             callbacks=callbacks, progress=False)
    return loop.fit(model, epochs=epochs, initial_epoch=initial_epoch), loop


def test_resuming_from_a_training_state_matches_an_uninterrupted_run(tmp_path):
    uninterrupted, _ = _digits_run(tmp_path, epochs=3)
    state = str(tmp_path / "state-{epoch}.safetensors")
    _digits_run(tmp_path, epochs=1, state_path=state)
    s4tf.random.seed(123)  # resuming must restore the random state itself
    resumed, loop = _digits_run(tmp_path, epochs=3, resume_from=state.format(epoch=1))
    assert len(loop.history) == 2
    for a, b in zip(s4tf.tree_leaves(uninterrupted), s4tf.tree_leaves(resumed), strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_a_small_cnn_learns_digits_above_90_percent():
    class SmallCNN(s4tf.Layer):
        conv: layers.Conv2D
        pool: layers.MaxPool2D
        flatten: layers.Flatten
        dense: layers.Dense

        def __init__(self):
            self.conv = layers.Conv2D(filter_shape=(3, 3, 1, 16), padding="same",
                                      activation=s4tf.relu)
            self.pool = layers.MaxPool2D(pool_size=(2, 2), strides=(2, 2))
            self.flatten = layers.Flatten()
            self.dense = layers.Dense(4 * 4 * 16, 10)

        def __call__(self, x):
            return x.sequenced(self.conv, self.pool, self.flatten, self.dense)

    s4tf.random.seed(0)
    data = datasets.Digits(batch_size=32, seed=0)
    model = SmallCNN()
    loop = s4tf.TrainingLoop(training=data.training, validation=data.validation,
                             optimizer=optimizers.Adam(model, learning_rate=1e-2),
                             loss=s4tf.softmax_cross_entropy, progress=False)
    model = loop.fit(model, epochs=5)
    assert loop.history[-1]["val_accuracy"] > 0.9, loop.history
    assert isinstance(loop.metrics[0]._total, s4tf.Tensor)  # running sums stay tensors


def test_bad_arguments_are_explained():
    model = MLP(inputs=3, width=4, classes=2)
    with pytest.raises(TypeError, match="loss must be a function"):
        s4tf.TrainingLoop(training=tiny_data(), optimizer=optimizers.SGD(model), loss=None)
    with pytest.raises(TypeError, match="Callback instances"):
        tiny_loop(model, callbacks=[object()])
    with pytest.raises(ValueError, match="unknown metric 'f1'"):
        tiny_loop(model, metrics=("f1",))
    with pytest.raises(ValueError, match="epochs must be a positive int"):
        tiny_loop(model).fit(model, epochs=0)


class DropoutMLP(s4tf.Layer):
    hidden: layers.Dense
    drop: layers.Dropout
    out: layers.Dense

    def __init__(self):
        self.hidden = layers.Dense(3, 8, activation=s4tf.relu)
        self.drop = layers.Dropout(0.25)
        self.out = layers.Dense(8, 2)

    def __call__(self, x):
        return self.out(self.drop(self.hidden(x)))


def _scheduled_run(epochs, resume_from=None, state_path=None):
    """Fresh objects every call: data, model, optimizer, schedule and loop."""
    rng = np.random.default_rng(7)
    data = Batches.from_arrays(rng.normal(size=(10, 3)).astype(np.float32),
                               rng.integers(0, 2, size=10), batch_size=4, shuffle=True,
                               seed=5, prefetch=False)
    s4tf.random.seed(0)
    model = DropoutMLP()
    optimizer = optimizers.Adam(model, learning_rate=0.05)
    initial_epoch = 0
    if resume_from is not None:
        model, initial_epoch, _ = s4tf.load_training_state(resume_from, like=model,
                                                           optimizer=optimizer)
    rates = []

    class RateProbe(s4tf.callbacks.Callback):
        def on_update_start(self, loop, gradients):
            rates.append((loop.step, loop.optimizer.learning_rate))

    schedule = optimizers.schedules.ExponentialDecay(0.05, decay_rate=0.5, decay_steps=3)
    callbacks = [s4tf.callbacks.LearningRateScheduler(schedule, per="step"), RateProbe()]
    if state_path is not None:
        callbacks.append(s4tf.callbacks.ModelCheckpoint(state_path, training_state=True))
    loop = s4tf.TrainingLoop(training=data, optimizer=optimizer, loss=s4tf.softmax_cross_entropy,
                             callbacks=callbacks, progress=False)
    return loop.fit(model, epochs=epochs, initial_epoch=initial_epoch), loop, rates


def test_resuming_with_a_per_step_schedule_is_bit_exact(tmp_path):
    unbroken, unbroken_loop, unbroken_rates = _scheduled_run(epochs=4)
    state = str(tmp_path / "state-{epoch}.safetensors")
    _scheduled_run(epochs=2, state_path=state)
    s4tf.random.seed(99)  # resuming restores the random state (Dropout's masks) itself
    resumed, loop, rates = _scheduled_run(epochs=4, resume_from=state.format(epoch=2))
    assert loop.step == unbroken_loop.step == 12
    assert rates == unbroken_rates[6:]  # steps 6..11 with the same decayed rates
    for a, b in zip(s4tf.tree_leaves(unbroken), s4tf.tree_leaves(resumed), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def _fixed_model_fit(n, backend, epochs=1, drop_remainder=None, stream=None):
    """A fit with learning rate 0 (the model never changes, metrics have closed forms)."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=(n, 3)).astype(np.float32)
    y = rng.integers(0, 2, size=n)
    vx = rng.normal(size=(7, 3)).astype(np.float32)
    vy = rng.integers(0, 2, size=7)
    with s4tf.backend(backend):
        s4tf.random.seed(2)
        model = MLP(inputs=3, width=4, classes=2)
        loop = s4tf.TrainingLoop(
            training=Batches.from_arrays(x, y, batch_size=4, prefetch=False),
            validation=Batches.from_arrays(vx, vy, batch_size=4, prefetch=False),
            optimizer=optimizers.SGD(model, learning_rate=0.0),
            loss=s4tf.softmax_cross_entropy, progress=stream is not None,
            drop_remainder=drop_remainder)
        loop.fit(model, epochs=epochs)

    def mean_loss(a, b):
        with s4tf.backend("naive"):
            return float(s4tf.softmax_cross_entropy(logits=model.to("naive")(s4tf.Tensor(a)),
                                                    labels=s4tf.Tensor(b)))

    return loop, mean_loss(x, y), mean_loss(x[:8], y[:8]), mean_loss(vx, vy)


def test_on_xla_a_short_last_batch_is_dropped_and_compiles_nothing_more(monkeypatch):
    pytest.importorskip("jax")
    import io
    import sys

    from s4tf.backends.xla import compiler

    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    compiler.clear_cache()
    s4tf.xla.reset_metrics()
    _fixed_model_fit(8, "xla", epochs=2)
    assert s4tf.xla.metrics()["compiles"] > 0
    s4tf.xla.reset_metrics()
    loop, _, first_eight, validation = _fixed_model_fit(10, "xla", epochs=2, stream=stream)
    # The same programs as for 8 examples: no step was compiled for the short batch.
    assert s4tf.xla.metrics()["compiles"] == 0
    assert loop.step == 4  # two batches of 4 per epoch
    for logs in loop.history:  # training: the 8 examples trained on; validation: all 7
        assert logs["loss"] == pytest.approx(first_eight, abs=1e-5)
        assert logs["val_loss"] == pytest.approx(validation, abs=1e-5)
    notes = [line for line in stream.getvalue().splitlines() if "left out" in line]
    assert len(notes) == 1 and "(2 examples, fewer than 4)" in notes[0]
    assert "drop_remainder=False" in notes[0]
    s4tf.xla.reset_metrics()
    with s4tf.backend("xla"):
        loop.fit(MLP(inputs=3, width=4, classes=2), epochs=3, initial_epoch=2)
    assert s4tf.xla.metrics()["compiles"] == 0, "a later epoch compiled again"


def test_eager_backends_train_on_the_short_last_batch_unless_told_otherwise():
    loop, every_example, first_eight, _ = _fixed_model_fit(10, "naive")
    assert loop.step == 3 and loop.history[0]["loss"] == pytest.approx(every_example, abs=1e-6)
    loop, _, first_eight, _ = _fixed_model_fit(10, "naive", drop_remainder=True)
    assert loop.step == 2 and loop.history[0]["loss"] == pytest.approx(first_eight, abs=1e-6)


def test_epoch_k_visits_the_examples_in_the_order_of_pass_k():
    """Nothing but the loop starts a pass (a progress bar that called iter() would skip one)."""
    labels = np.arange(10)
    data = Batches.from_arrays(np.zeros((10, 3), np.float32), labels, batch_size=4,
                               shuffle=True, seed=3)
    seen = []

    def loss(logits, labels):
        seen.extend(labels.numpy().tolist())
        return s4tf.softmax_cross_entropy(logits=logits, labels=labels * 0)

    model = MLP(inputs=3, width=4, classes=2)
    for progress in (False, True):
        seen.clear()
        loop = s4tf.TrainingLoop(training=data, optimizer=optimizers.SGD(model), loss=loss,
                                 progress=progress, drop_remainder=False)
        loop.fit(MLP(inputs=3, width=4, classes=2), epochs=3)
        assert seen == [int(i) for epoch in range(3) for i in data.order(epoch)]
        assert data.epoch == 3  # three passes started, no more
