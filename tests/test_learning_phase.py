"""Learning phase: default, context managers, nesting, restoration, threads."""

import threading

import pytest

import s4tf


def test_default_and_contexts():
    assert s4tf.current_learning_phase() == "inference"
    with s4tf.learning_phase("training"):
        assert s4tf.current_learning_phase() == "training"
        with s4tf.inference():
            assert s4tf.current_learning_phase() == "inference"
        assert s4tf.current_learning_phase() == "training"
    with s4tf.training():
        assert s4tf.current_learning_phase() == "training"
    assert s4tf.current_learning_phase() == "inference"


def test_restored_after_an_exception():
    with pytest.raises(RuntimeError):
        with s4tf.training():
            raise RuntimeError("boom")
    assert s4tf.current_learning_phase() == "inference"


def test_unknown_phase_is_rejected():
    with pytest.raises(ValueError, match="unknown phase 'train'"):
        with s4tf.learning_phase("train"):
            pass


def test_phase_is_per_thread():
    seen = []
    with s4tf.training():
        thread = threading.Thread(target=lambda: seen.append(s4tf.current_learning_phase()))
        thread.start()
        thread.join()
    assert seen == ["inference"]


class Net(s4tf.Layer):
    dense: s4tf.layers.Dense
    norm: s4tf.layers.BatchNorm
    drop: s4tf.layers.Dropout

    def __init__(self):
        self.dense = s4tf.layers.Dense(3, 4)
        self.norm = s4tf.layers.BatchNorm(4)
        self.drop = s4tf.layers.Dropout(0.5)

    def __call__(self, x):
        return self.drop(self.norm(self.dense(x)))


@pytest.fixture
def fresh_warnings(monkeypatch):
    import sys

    monkeypatch.setattr(sys.modules["s4tf.learning_phase"], "_warned_sites", set())


def _loss(model):
    return model(s4tf.ones([2, 3])).sum()


def test_differentiating_batchnorm_or_dropout_by_default_warns_once_at_the_users_line(
        fresh_warnings):
    model = Net()
    with pytest.warns(s4tf.InferencePhaseWarning, match=r"with s4tf\.training\(\):") as caught:
        for _ in range(3):
            s4tf.gradient(model, of=_loss)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2, messages  # BatchNorm's line and Dropout's, once each
    assert "BatchNorm is being differentiated" in messages[0]
    assert "Dropout is being differentiated" in messages[1]
    assert {w.filename for w in caught} == {__file__}


def test_explicit_phases_do_not_warn_and_the_default_comes_back(fresh_warnings):
    import warnings

    model = Net()
    with warnings.catch_warnings():
        warnings.simplefilter("error", s4tf.InferencePhaseWarning)
        with s4tf.inference():
            s4tf.gradient(model, of=_loss)
        with s4tf.training():
            s4tf.gradient(model, of=_loss)
            with s4tf.inference():
                s4tf.gradient(model, of=_loss)
        model(s4tf.ones([2, 3]))  # not differentiated: nothing to warn about
        s4tf.gradient(s4tf.ones([2, 3]), of=lambda x: s4tf.layers.Dense(3, 1)(x).sum())
    with pytest.warns(s4tf.InferencePhaseWarning):  # the blocks restored the default
        s4tf.gradient(model, of=_loss)


def test_the_training_loop_never_warns(fresh_warnings):
    import warnings

    import numpy as np

    from s4tf.datasets import Batches

    rng = np.random.default_rng(0)
    data = Batches.from_arrays(rng.normal(size=(8, 3)).astype(np.float32),
                               rng.integers(0, 4, size=8), batch_size=4, prefetch=False)
    model = Net()
    loop = s4tf.TrainingLoop(training=data, validation=data,
                             optimizer=s4tf.optimizers.SGD(model, learning_rate=0.1),
                             loss=s4tf.softmax_cross_entropy, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", s4tf.InferencePhaseWarning)
        loop.fit(model, epochs=1)
