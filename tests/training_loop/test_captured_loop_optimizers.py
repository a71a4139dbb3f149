"""TrainingLoop on xla keeps the traced step for optimizers a captured step cannot follow."""

import numpy as np
import pytest

import s4tf
from s4tf import layers, optimizers
from s4tf.datasets import Batches

pytest.importorskip("jax")


def _data():
    rng = np.random.default_rng(0)
    return Batches.from_arrays(rng.normal(size=(8, 3)).astype(np.float32),
                               rng.integers(0, 2, size=8), batch_size=4, prefetch=False)


@pytest.mark.parametrize("make", [
    lambda m: optimizers.SGD(m, learning_rate=0.1),
    lambda m: optimizers.Adam(m, param_groups=[{"params": "weight", "learning_rate": 1e-3}]),
], ids=["plain", "param_groups"])
@pytest.mark.parametrize("loss_scale", [None, "dynamic"])
def test_fit_on_xla_matches_the_naive_run(make, loss_scale):
    losses = {}
    for name in ("naive", "xla"):
        with s4tf.backend(name):
            s4tf.random.seed(0)
            model = layers.Dense(3, 2)
            loop = s4tf.TrainingLoop(training=_data(), optimizer=make(model),
                                     loss=s4tf.softmax_cross_entropy, progress=False,
                                     loss_scale=loss_scale)
            loop.fit(model, epochs=2)
            losses[name] = loop.model.weight.numpy()
    np.testing.assert_allclose(losses["xla"], losses["naive"], rtol=1e-5, atol=1e-6)
