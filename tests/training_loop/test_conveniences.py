"""predict, gradient accumulation, the moving average of weights, ReduceLROnPlateau,
TensorBoard files, early stopping's line, and ``from s4tf.callbacks import ...``."""

from __future__ import annotations

import numpy as np
import pytest

import s4tf
from s4tf import layers, optimizers
from s4tf.datasets import Batches
from s4tf.optimizers import schedules


class Net(s4tf.Layer):
    hidden: layers.Dense
    dropout: layers.Dropout
    out: layers.Dense

    def __init__(self):
        self.hidden = layers.Dense(3, 8, activation=s4tf.relu)
        self.dropout = layers.Dropout(0.5)
        self.out = layers.Dense(8, 2)

    def __call__(self, x):
        return self.out(self.dropout(self.hidden(x)))


def arrays(n=10, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 3)).astype(np.float32), rng.integers(0, 2, size=n)


def net(seed=0):
    s4tf.random.seed(seed)
    return Net()


def weights(model):
    return [leaf.numpy().copy() for leaf in s4tf.tree_leaves(model)
            if isinstance(leaf, s4tf.Tensor)]


def fit(model, batch_size, accumulate=1, epochs=2, callbacks=(), validation=None, **kwargs):
    x, y = arrays()
    loop = s4tf.TrainingLoop(
        training=Batches.from_arrays(x, y, batch_size=batch_size, prefetch=False),
        validation=validation, optimizer=optimizers.SGD(model, learning_rate=0.1, momentum=0.9),
        loss=s4tf.softmax_cross_entropy, progress=False, callbacks=callbacks, **kwargs)
    return loop, loop.fit(model, epochs=epochs, accumulate=accumulate)


class NoDropout(Net):
    def __call__(self, x):
        return self.out(self.hidden(x))


@pytest.mark.parametrize("accumulate, large_batch, updates", [(2, 8, 4), (3, 10, 2)])
def test_accumulating_k_batches_is_one_batch_k_times_larger(backend, accumulate, large_batch,
                                                            updates):
    # 10 examples in batches of 4, 4 and 2. In groups of two (the last group short)
    # against batches of 8 and 2: the same two updates per epoch; in one group of
    # three (uneven batches, weighted by their sizes) against one batch of 10.
    s4tf.random.seed(0)
    small = NoDropout()
    large = s4tf.tree_map(lambda leaf: leaf + 0 if isinstance(leaf, s4tf.Tensor) else leaf,
                          small)
    # Every batch is trained on, short ones too (on xla too: the comparison needs them).
    accumulated, small = fit(small, batch_size=4, accumulate=accumulate, drop_remainder=False)
    whole, large = fit(large, batch_size=large_batch, drop_remainder=False)
    assert accumulated.step == whole.step == accumulated.optimizer.step == updates
    for a, b in zip(weights(small), weights(large), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="accumulate must be a positive int"):
        accumulated.fit(small, epochs=1, accumulate=0)


def test_predict_runs_in_the_inference_phase_over_every_kind_of_data():
    model = net()
    x, y = arrays(10)
    loop, model = fit(model, batch_size=4, epochs=1)
    with s4tf.inference():
        expected = model(s4tf.Tensor(x)).numpy()
    batches = Batches.from_arrays(x, y, batch_size=3, prefetch=False)
    for data in (x, s4tf.Tensor(x), batches, [s4tf.Tensor(x[:6]), s4tf.Tensor(x[6:])]):
        got = loop.predict(model, data, batch_size=4)
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6)
    with pytest.raises(ValueError, match="gave no batches"):
        loop.predict(model, [])


def test_the_moving_average_is_validated_and_returned():
    seen = []

    class Keep(s4tf.callbacks.Callback):
        def on_batch_end(self, loop, batch, loss):
            seen.append(weights(loop.model))

    x, y = arrays(6, seed=3)
    validation = Batches.from_arrays(x, y, batch_size=6, prefetch=False)
    ema = s4tf.callbacks.ExponentialMovingAverage(decay=0.75, warmup=False)
    model = net()
    start = weights(model)
    loop, returned = fit(model, batch_size=4, callbacks=[ema, Keep()], validation=validation)
    expected = start
    for step in seen:
        expected = [0.75 * a + 0.25 * w for a, w in zip(expected, step, strict=True)]
    for got, want in zip(weights(returned), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert returned is ema.average
    assert not np.allclose(weights(returned)[0], seen[-1][0])  # not the live model
    assert loop.history[-1]["val_loss"] == pytest.approx(
        loop.evaluate(ema.average, validation)["loss"], rel=1e-6)


def test_the_moving_average_counts_updates_not_accumulated_batches():
    ema = s4tf.callbacks.ExponentialMovingAverage(decay=0.9, warmup=False)
    fit(net(), batch_size=2, accumulate=2, epochs=1, callbacks=[ema])
    assert ema.updates == 3  # batches 2, 2 | 2, 2 | 2


class FakeLoop:
    def __init__(self, optimizer):
        self.optimizer, self.notes = optimizer, []

    def note(self, message):
        self.notes.append(message)


def test_reduce_lr_on_plateau_lowers_the_rate_after_patience_epochs():
    loop = FakeLoop(optimizers.SGD([s4tf.ones([1])], learning_rate=1.0))
    plateau = s4tf.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=1,
                                               cooldown=1, min_learning_rate=0.2)
    plateau.on_fit_start(loop, None)
    curve = [1.0, 0.9, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95]
    rates = []
    for epoch, value in enumerate(curve):
        plateau.on_epoch_end(loop, epoch, {"val_loss": value}, None)
        rates.append(loop.optimizer.learning_rate)
    # Two epochs without improvement after epoch 1, then a cooldown epoch, ...
    assert rates == [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25]
    assert plateau.reductions == [(3, 0.5), (6, 0.25)]
    assert "learning rate 1 -> 0.5 after epoch 4" in loop.notes[0]
    for epoch in range(9, 20):
        plateau.on_epoch_end(loop, epoch, {"val_loss": 0.95}, None)
    assert loop.optimizer.learning_rate == 0.2 and len(loop.notes) == 3  # the floor


def test_reduce_lr_on_plateau_refuses_a_scheduled_rate():
    scheduled = optimizers.SGD([s4tf.ones([1])], learning_rate=schedules.StepDecay(1.0, 10))
    with pytest.raises(TypeError, match="schedule"):
        s4tf.callbacks.ReduceLROnPlateau().on_fit_start(FakeLoop(scheduled), None)


def test_early_stopping_says_why_it_stopped(capsys):
    x, y = arrays()
    loop = s4tf.TrainingLoop(
        training=Batches.from_arrays(x, y, batch_size=5, prefetch=False),
        optimizer=optimizers.SGD(net(), learning_rate=0.0), loss=s4tf.softmax_cross_entropy,
        callbacks=[s4tf.callbacks.EarlyStopping(monitor="loss", patience=1, min_delta=1.0)],
        metrics=("loss",))
    loop.fit(NoDropout(), epochs=10)
    line = ("EarlyStopping: stopped after epoch 3: loss has not improved by more than 1.0 "
            "for 2 epochs (the best was")
    assert loop.notes[-1].startswith(line) and "in epoch 1)" in loop.notes[-1]
    assert line in capsys.readouterr().err
    assert len(loop.history) == 3


def test_callbacks_import_from_their_public_module():
    import s4tf.callbacks as module
    from s4tf.callbacks import EarlyStopping, ReduceLROnPlateau, TensorBoard  # noqa: F401
    assert module.EarlyStopping is s4tf.training_loop.EarlyStopping
    assert s4tf.callbacks is module


def test_tensorboard_writes_event_files_tensorboard_reads(tmp_path):
    pytest.importorskip("tensorboardX")
    accumulator = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator")
    x, y = arrays(8, seed=4)
    validation = Batches.from_arrays(x, y, batch_size=8, prefetch=False)
    board = s4tf.callbacks.TensorBoard(tmp_path / "logs", update_freq=2)
    loop, _ = fit(net(), batch_size=4, epochs=2, callbacks=[board], validation=validation)

    def scalars(split, tag):
        events = accumulator.EventAccumulator(str(tmp_path / "logs" / split))
        events.Reload()
        return [(e.step, e.value) for e in events.Scalars(tag)]

    for split, prefix in (("train", ""), ("validation", "val_")):
        for metric in ("loss", "accuracy"):
            got = scalars(split, f"epoch_{metric}")
            want = [(epoch + 1, logs[prefix + metric]) for epoch, logs in enumerate(loop.history)]
            assert [s for s, _ in got] == [s for s, _ in want]
            np.testing.assert_allclose([v for _, v in got], [v for _, v in want], rtol=1e-6)
    assert [s for s, _ in scalars("train", "batch_loss")] == [2, 4, 6]
    assert [v for _, v in scalars("train", "learning_rate")] == pytest.approx([0.1, 0.1])


@pytest.mark.parametrize("use", ["average", "accumulate"])
def test_the_live_model_still_updates_in_place(monkeypatch, use):
    from s4tf.cow import engine

    decisions = []
    analyze = engine.analyze

    def watched(model, root_unique):
        found = analyze(model, root_unique)
        decisions.append(all(found.in_place))
        return found

    monkeypatch.setattr(engine, "analyze", watched)
    callbacks = [s4tf.callbacks.ExponentialMovingAverage(0.9)] if use == "average" else []
    fit(net(), batch_size=2, accumulate=2 if use == "accumulate" else 1, epochs=2,
        callbacks=callbacks)
    # The first update copies (fit's caller still holds the model); every later one is in place.
    assert len(decisions) == (10 if use == "average" else 6)
    assert all(decisions[1:]), decisions
