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


def _random_classifier_batches(seed=0, sizes=(7, 7, 3), classes=5):
    rng = np.random.default_rng(seed)
    outputs = [rng.normal(size=(n, classes)).astype(np.float32) for n in sizes]
    labels = [rng.integers(0, classes, n).astype(np.int32) for n in sizes]
    return outputs, labels


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_top_k_accuracy_matches_a_sort(backend, k):
    outputs, labels = _random_classifier_batches()
    metric = make_metric(f"top_{k}_accuracy") if k > 1 else Accuracy(top_k=1)
    for o, y in zip(outputs, labels, strict=True):
        metric.update(None, s4tf.Tensor(o), s4tf.Tensor(y))
    o, y = np.concatenate(outputs), np.concatenate(labels)
    expected = np.mean([label in np.argsort(-row)[:k] for row, label in zip(o, y, strict=True)])
    assert metric.result() == pytest.approx(expected, abs=1e-7)
    assert metric.name == ("accuracy" if k == 1 else f"top_{k}_accuracy")
    with pytest.raises(ValueError, match="at least 6 classes"):
        Accuracy(top_k=6).update(None, s4tf.Tensor(o), s4tf.Tensor(y))


def test_precision_and_recall_per_class_and_averaged(backend):
    from s4tf.training_loop import Precision, Recall

    outputs, labels = _random_classifier_batches(seed=1, classes=4)
    metrics = [Precision(), Recall(), Precision(class_id=2), Recall(class_id=2)]
    for o, y in zip(outputs, labels, strict=True):
        for metric in metrics:
            metric.update(None, s4tf.Tensor(o), s4tf.Tensor(y))
    predicted, y = np.concatenate(outputs).argmax(-1), np.concatenate(labels)
    hits = np.array([np.sum((predicted == c) & (y == c)) for c in range(4)])
    precision = hits / np.maximum([np.sum(predicted == c) for c in range(4)], 1)
    recall = hits / np.maximum([np.sum(y == c) for c in range(4)], 1)
    got = [m.result() for m in metrics]
    assert got == pytest.approx([precision.mean(), recall.mean(), precision[2], recall[2]],
                                abs=1e-6)
    assert [m.name for m in metrics] == ["precision", "recall", "precision_2", "recall_2"]


def test_precision_of_one_score_per_example_uses_the_threshold(backend):
    from s4tf.training_loop import Precision

    logits = s4tf.Tensor(np.array([[2.0], [-1.0], [0.5], [0.1]], np.float32))
    labels = s4tf.Tensor(np.array([1, 1, 0, 1], np.int32))
    at_zero, at_one = Precision(threshold=0.0), Precision(threshold=1.0)
    at_zero.update(None, logits, labels)
    at_one.update(None, logits, labels)
    assert at_zero.result() == pytest.approx(2 / 3) and at_one.result() == 1.0


def test_precision_and_recall_run_in_a_training_loop():
    x = np.random.default_rng(0).normal(size=(12, 3)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int32)
    data = Batches.from_arrays(x, y, batch_size=4, prefetch=False)
    model = layers.Dense(3, 2)
    loop = s4tf.TrainingLoop(training=data, validation=data,
                             optimizer=optimizers.SGD(model, learning_rate=0.1),
                             loss=s4tf.softmax_cross_entropy, progress=False,
                             metrics=("loss", "accuracy", "precision", "recall",
                                      "top_2_accuracy"))
    loop.fit(model, epochs=1)
    logs = loop.history[-1]
    assert {"precision", "recall", "val_precision", "val_recall"} <= set(logs)
    assert logs["val_top_2_accuracy"] == 1.0  # two classes: always in the top two
