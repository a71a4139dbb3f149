"""TrainingLoop(loss_scale=...): mixed float16 training with a dynamic loss scale."""

from __future__ import annotations

import numpy as np
import pytest

import s4tf
from s4tf import datasets, layers, optimizers

pytestmark = pytest.mark.filterwarnings("ignore::s4tf.xla.RecompilationWarning")


def _model():
    s4tf.random.seed(0)
    return layers.Sequential(layers.Flatten(), layers.Dense(64, 32, activation=s4tf.relu),
                             layers.Dense(32, 10))


@pytest.mark.parametrize("backend", ["naive", "xla"])
def test_mixed_float16_fit_with_dynamic_loss_scale(backend):
    with s4tf.backend(backend):
        data = datasets.Digits(batch_size=128, seed=0)
        model = _model()
        loop = s4tf.TrainingLoop(training=data.training, validation=data.validation,
                                 optimizer=optimizers.Adam(model, learning_rate=1e-2),
                                 loss=s4tf.softmax_cross_entropy, progress=False,
                                 loss_scale="dynamic")
        assert isinstance(loop.optimizer, optimizers.LossScale)
        with s4tf.precision.policy("mixed_float16"):
            model = loop.fit(model, epochs=3)
    assert model.layers[1].weight.dtype == s4tf.float32
    assert loop.optimizer.scale == 2.0**15 and loop.optimizer.skipped == 0
    losses = [epoch["loss"] for epoch in loop.history]
    assert losses[0] < 5 and losses[-1] < 0.5 * losses[0]  # unscaled losses, falling
    assert loop.history[-1]["val_accuracy"] > 0.8


def test_overflowing_steps_are_skipped():
    data = datasets.Digits(batch_size=256, seed=0)
    model = _model()
    before = model.layers[1].weight.numpy().copy()
    # 2**200 overflows every float32 gradient: every step must be skipped.
    loop = s4tf.TrainingLoop(training=data.training, optimizer=optimizers.SGD(model),
                             loss=s4tf.softmax_cross_entropy, progress=False,
                             loss_scale=2.0**127, terminate_on_nan=True)
    loop.optimizer.scale = 2.0**200
    with np.errstate(over="ignore", invalid="ignore"):
        model = loop.fit(model, epochs=1)
    assert loop.optimizer.skipped == loop.step > 0
    assert loop.optimizer.step == 0  # the wrapped optimizer applied nothing
    np.testing.assert_array_equal(model.layers[1].weight.numpy(), before)


def test_rejects_an_unknown_loss_scale():
    with pytest.raises(ValueError, match="loss_scale must be"):
        s4tf.TrainingLoop(training=[], optimizer=optimizers.SGD([s4tf.ones([1])]),
                          loss=s4tf.softmax_cross_entropy, loss_scale="always")
