"""The training display: a kept line per epoch on a terminal, plain lines elsewhere."""

from __future__ import annotations

import io
import re
import sys

import numpy as np
import pytest

import s4tf
from s4tf import layers, optimizers
from s4tf.datasets import Batches


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def _fit(monkeypatch, stream, progress=True):
    monkeypatch.setattr(sys, "stderr", stream)
    rng = np.random.default_rng(0)
    data = Batches.from_arrays(rng.normal(size=(10, 3)).astype(np.float32),
                               rng.integers(0, 2, size=10), batch_size=4, prefetch=False)
    s4tf.random.seed(0)
    model = layers.Sequential(layers.Dense(3, 4, activation=s4tf.relu), layers.Dense(4, 2))
    loop = s4tf.TrainingLoop(training=data, validation=data, optimizer=optimizers.SGD(model),
                             loss=s4tf.softmax_cross_entropy, progress=progress)
    loop.fit(model, epochs=2)
    return stream.getvalue(), loop.history


def test_a_terminal_keeps_one_bar_per_epoch_ending_with_every_metric(monkeypatch):
    output, history = _fit(monkeypatch, FakeTerminal())
    assert "\r" in output  # a live bar
    for epoch, logs in enumerate(history, start=1):
        # The bar's last drawing of the epoch, kept on screen by a newline.
        finals = re.findall(rf"\rEpoch {epoch}/2: 100%[^\r\n]*\n", output)
        assert len(finals) == 1, output
        postfix = ", ".join(f"{name}={value:.4f}" for name, value in logs.items())
        assert finals[0].endswith(f"{postfix}]\n")
        assert set(logs) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert "validation" in output  # a transient bar while validating


def test_a_stream_that_is_no_terminal_gets_one_plain_line_per_epoch(monkeypatch):
    output, history = _fit(monkeypatch, io.StringIO())
    assert "\r" not in output and "\x1b" not in output
    lines = output.splitlines()
    assert len(lines) == 2, output
    for epoch, (line, logs) in enumerate(zip(lines, history, strict=True), start=1):
        metrics = " - ".join(f"{name}: {value:.4f}" for name, value in logs.items())
        assert re.fullmatch(rf"Epoch {epoch}/2 - 3 batches in \d+\.\d s - {metrics}", line), line


def test_no_progress_writes_nothing(monkeypatch):
    for stream in (FakeTerminal(), io.StringIO()):
        output, _ = _fit(monkeypatch, stream, progress=False)
        assert output == ""


@pytest.mark.parametrize("stream", [FakeTerminal, io.StringIO])
def test_evaluate_alone_shows_nothing_permanent(monkeypatch, stream):
    monkeypatch.setattr(sys, "stderr", stream())
    data = Batches.from_arrays(np.zeros((5, 3), np.float32), np.zeros(5), 2, prefetch=False)
    model = layers.Dense(3, 2)
    loop = s4tf.TrainingLoop(training=data, optimizer=optimizers.SGD(model),
                             loss=s4tf.softmax_cross_entropy)
    loop.evaluate(model, data)
    assert "\n" not in sys.stderr.getvalue().replace("\r", "").strip()


@pytest.mark.parametrize("stream", [FakeTerminal, io.StringIO])
def test_showing_progress_starts_no_extra_pass_over_the_data(monkeypatch, stream):
    monkeypatch.setattr(sys, "stderr", stream())
    data = Batches.from_arrays(np.zeros((5, 3), np.float32), np.zeros(5), 2, prefetch=False)
    validation = Batches.from_arrays(np.zeros((5, 3), np.float32), np.zeros(5), 2,
                                     prefetch=False)
    model = layers.Dense(3, 2)
    loop = s4tf.TrainingLoop(training=data, validation=validation,
                             optimizer=optimizers.SGD(model), loss=s4tf.softmax_cross_entropy)
    loop.fit(model, epochs=2)
    assert (data.epoch, validation.epoch) == (2, 2)


def test_the_live_bar_reads_the_previous_steps_metrics_and_the_epoch_line_is_exact(
        monkeypatch, backend):
    # Reading the step just launched would wait for the device; the bar reads the
    # sums as of the step before, so the device runs one step while the next traces.
    from s4tf.training_loop.display import EpochDisplay

    seen = []
    advance = EpochDisplay.advance
    monkeypatch.setattr(EpochDisplay, "advance",
                        lambda self, running: (seen.append(running()), advance(self, running)))
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(12, 3)).astype(np.float32), rng.integers(0, 2, size=12)
    s4tf.random.seed(0)
    model = layers.Dense(3, 2)
    with s4tf.backend(backend):
        data = Batches.from_arrays(x, y, batch_size=4, prefetch=False)
        per_batch = [float(s4tf.softmax_cross_entropy(logits=model(s4tf.Tensor(x[i:i + 4])),
                                                      labels=s4tf.Tensor(y[i:i + 4])))
                     for i in (0, 4, 8)]
        model = s4tf.to_backend(model, backend)
        loop = s4tf.TrainingLoop(training=data, optimizer=optimizers.SGD(model, learning_rate=0.0),
                                 loss=s4tf.softmax_cross_entropy, metrics=("loss",),
                                 progress=False)
        loop.fit(model, epochs=1)
    assert seen[0] == {}
    for k in (1, 2):
        assert seen[k]["loss"] == pytest.approx(np.mean(per_batch[:k]), abs=1e-6)
    assert loop.history[-1]["loss"] == pytest.approx(np.mean(per_batch), abs=1e-6)
