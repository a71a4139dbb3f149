"""Running metrics against hand-computed values on uneven batches (4, 4, then 1 example).

An average of batch means, or a count of batches instead of examples, gives a
different number on these batches; each expected value below is worked out by
hand from the example-level definition.
"""

from __future__ import annotations

import numpy as np
import pytest

import s4tf
from s4tf import layers, optimizers
from s4tf.datasets import Batches
from s4tf.training_loop import Accuracy, Mean, make_metric

# Nine examples in batches of 4, 4 and 1; two classes. Column 1 wins where the
# logit pair reads (0, 1).
_LOGITS = [
    [[0, 1], [0, 1], [0, 1], [1, 0]],   # predicts 1 1 1 0
    [[1, 0], [1, 0], [1, 0], [0, 1]],   # predicts 0 0 0 1
    [[0, 1]],                           # predicts 1
]
_LABELS = [[1, 1, 1, 1], [1, 1, 1, 1], [0]]  # correct: 3, then 1, then 0


def _batches():
    return [(s4tf.Tensor(np.array(o, np.float32)), s4tf.Tensor(np.array(y, np.int32)))
            for o, y in zip(_LOGITS, _LABELS, strict=True)]


def test_accuracy_counts_examples_not_batches(backend):
    accuracy = Accuracy()
    for output, labels in _batches():
        accuracy.update(None, output, labels)
    # 4 correct of 9 examples; a mean of batch accuracies would be (3/4 + 1/4 + 0) / 3.
    assert accuracy.result() == pytest.approx(4 / 9, abs=1e-7)


def test_the_loss_metric_weights_each_batch_mean_by_its_examples(backend):
    mean = Mean()
    for loss, (_, labels) in zip([1.0, 2.0, 10.0], _batches(), strict=True):
        mean.update(s4tf.Tensor(loss), None, labels)
    # (4 * 1 + 4 * 2 + 1 * 10) / 9; the unweighted mean of batch means would be 13 / 3.
    assert mean.result() == pytest.approx(22 / 9, abs=1e-6)


def test_a_function_metric_is_weighted_by_examples_too(backend):
    metric = make_metric(("first_logit", lambda output, labels: output[:, 0].mean()))
    for output, labels in _batches():
        metric.update(None, output, labels)
    # Column 0 holds 1 + 3 + 0 ones over 9 examples.
    assert metric.result() == pytest.approx(4 / 9, abs=1e-7)


def test_reset_forgets_earlier_batches(backend):
    accuracy = Accuracy()
    for output, labels in _batches():
        accuracy.update(None, output, labels)
    accuracy.reset()
    assert np.isnan(accuracy.result())
    output, labels = _batches()[2]
    accuracy.update(None, output, labels)
    assert accuracy.result() == 0.0


class Fixed(s4tf.Layer):
    dense: layers.Dense

    def __init__(self):
        self.dense = layers.Dense(3, 2)

    def __call__(self, x):
        return self.dense(x)


def test_fit_and_validation_metrics_are_the_means_over_every_example():
    """With learning rate 0 the model never changes, so every metric has a closed form."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(9, 3)).astype(np.float32)
    y = rng.integers(0, 2, size=9)
    s4tf.random.seed(1)
    model = Fixed()
    logits = model(s4tf.Tensor(x))
    expected_loss = float(s4tf.softmax_cross_entropy(logits=logits, labels=s4tf.Tensor(y)))
    expected_accuracy = float(np.mean(logits.numpy().argmax(-1) == y))
    per_batch = [float(s4tf.softmax_cross_entropy(logits=logits[i:i + 4],
                                                  labels=s4tf.Tensor(y[i:i + 4])))
                 for i in (0, 4, 8)]
    assert abs(np.mean(per_batch) - expected_loss) > 1e-3  # the batches tell the two apart

    data = Batches.from_arrays(x, y, batch_size=4, prefetch=False)
    loop = s4tf.TrainingLoop(training=data, validation=data,
                             optimizer=optimizers.SGD(model, learning_rate=0.0),
                             loss=s4tf.softmax_cross_entropy, progress=False)
    loop.fit(model, epochs=1)
    logs = loop.history[-1]
    assert logs["loss"] == pytest.approx(expected_loss, abs=1e-6)
    assert logs["val_loss"] == pytest.approx(expected_loss, abs=1e-6)
    assert logs["accuracy"] == pytest.approx(expected_accuracy, abs=1e-7)
    assert logs["val_accuracy"] == pytest.approx(expected_accuracy, abs=1e-7)
