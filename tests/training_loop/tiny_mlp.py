"""The small model and data set the training-loop tests share."""

import numpy as np

import s4tf
from s4tf import layers
from s4tf.datasets import Batches


class MLP(s4tf.Layer):
    hidden: layers.Dense
    out: layers.Dense

    def __init__(self):
        self.hidden = layers.Dense(3, 4, activation=s4tf.relu)
        self.out = layers.Dense(4, 2)

    def __call__(self, x):
        return self.out(self.hidden(x))


def eight_examples(**options) -> Batches:
    """Eight examples of three features, two classes, in batches of four."""
    rng = np.random.default_rng(0)
    return Batches.from_arrays(rng.normal(size=(8, 3)).astype(np.float32),
                               rng.integers(0, 2, size=8), batch_size=4, prefetch=False,
                               **options)
