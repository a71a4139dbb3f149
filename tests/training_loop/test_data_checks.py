"""What the loop is given to train on: errors that say what came and what is expected."""

from __future__ import annotations

import numpy as np
import pytest

import s4tf
from s4tf import layers, optimizers
from s4tf.datasets import Batches


def pairs(n_batches: int = 2):
    rng = np.random.default_rng(0)
    return [(s4tf.Tensor(rng.normal(size=(4, 3)).astype(np.float32)),
             s4tf.Tensor(rng.integers(0, 2, size=4).astype(np.int32)))
            for _ in range(n_batches)]


def make_loop(training, validation=None):
    s4tf.random.seed(0)
    model = layers.Dense(3, 2)
    loop = s4tf.TrainingLoop(training=training, validation=validation,
                             optimizer=optimizers.SGD(model, learning_rate=0.1),
                             loss=s4tf.softmax_cross_entropy, progress=False)
    return loop, model


@pytest.mark.parametrize("make", [lambda: (batch for batch in pairs()), lambda: iter(pairs())],
                         ids=["generator", "iter(list)"])
def test_a_one_shot_iterator_for_several_epochs_is_refused_before_training(make):
    loop, model = make_loop(make())
    with pytest.raises(TypeError, match=r"one-shot iterator \((generator|list_iterator)\).*"
                                        r"the other 2 would be empty.*s4tf.datasets.Batches"):
        loop.fit(model, epochs=3)
    assert loop.step == 0
    loop, model = make_loop(make())
    loop.fit(model, epochs=1)  # one epoch uses it once: fine
    assert loop.step == 2
    loop, model = make_loop(pairs(), validation=make())
    with pytest.raises(TypeError, match="validation data is a one-shot iterator"):
        loop.fit(model, epochs=2)


class SharedPass:
    """Iterable, but every ``iter()`` returns the same iterator: used up after one pass."""

    def __init__(self):
        self._iterator = iter(pairs())

    def __iter__(self):
        return self._iterator


def test_data_that_gives_no_batches_in_a_later_epoch_raises_then():
    loop, model = make_loop(SharedPass())
    with pytest.raises(ValueError, match=r"no batches in epoch 2, after giving some.*"
                                         r"SharedPass's __iter__ does not start a new pass"):
        loop.fit(model, epochs=3)
    assert loop.step == 2 and len(loop.history) == 1
    loop, model = make_loop([])
    with pytest.raises(ValueError, match=r"\(list\) gave no batches in epoch 1: it is empty"):
        loop.fit(model, epochs=1)
    loop, model = make_loop(pairs(), validation=SharedPass())
    with pytest.raises(ValueError, match=r"the validation data gave no batches in epoch 2"):
        loop.fit(model, epochs=3)
    assert loop.step == 4 and len(loop.history) == 1


def test_a_batch_that_is_not_a_data_labels_pair_is_described():
    x, y = pairs(1)[0]
    loop, model = make_loop([(x, y, y)])
    with pytest.raises(TypeError, match=r"each training batch must be a \(data, labels\) pair; "
                                        r"batch 0 is a tuple of 3 items \(a Tensor of shape "
                                        r"\[4, 3\], a Tensor of shape \[4\], a Tensor"):
        loop.fit(model, epochs=1)
    loop, model = make_loop([(x, y), x])
    with pytest.raises(TypeError, match=r"batch 1 is a Tensor of shape \[4, 3\]"):
        loop.fit(model, epochs=1)
    with pytest.raises(TypeError, match=r"each validation batch must be a \(data, labels\) "
                                        r"pair; batch 0 is a dict"):
        loop.evaluate(model, [{"x": x, "y": y}])
    # What is a pair still trains: LabeledBatch (from Batches) and lists.
    data = Batches.from_arrays(np.zeros((8, 3), np.float32), np.zeros(8, np.int32),
                               batch_size=4, prefetch=False)
    loop, model = make_loop(data, validation=[[x, y]])
    loop.fit(model, epochs=2)
    assert loop.step == 4 and "val_loss" in loop.history[-1]


def test_numpy_batches_are_refused_with_the_way_to_tensors():
    x = np.zeros((4, 3), np.float32)
    y = np.zeros(4, np.int32)
    loop, model = make_loop([(x, s4tf.Tensor(y))])
    with pytest.raises(TypeError, match=r"the data of training batch 0 is a NumPy array "
                                        r"\(shape \(4, 3\), float32\).*s4tf.Tensor\(array\).*"
                                        r"Batches.from_arrays"):
        loop.fit(model, epochs=1)
    loop, model = make_loop([(s4tf.Tensor(x), y)])
    with pytest.raises(TypeError, match="the labels of training batch 0 is a NumPy array"):
        loop.fit(model, epochs=1)
    loop, model = make_loop([((s4tf.Tensor(x), x), s4tf.Tensor(y))])
    with pytest.raises(TypeError, match="the data of training batch 0 is a NumPy array"):
        loop.fit(model, epochs=1)
    with pytest.raises(TypeError, match="the data of validation batch 0 is a NumPy array"):
        loop.evaluate(model, [(x, s4tf.Tensor(y))])

