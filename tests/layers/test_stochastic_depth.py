"""StochasticDepth: identity in inference, whole rows (or the batch) dropped in training."""

import numpy as np
import pytest

import s4tf
from s4tf import layers
from s4tf.testing import check_gradients


def test_identity_in_inference_and_at_probability_zero():
    x = s4tf.random.normal([4, 2, 2, 3], seed=0)
    assert layers.StochasticDepth(0.5)(x) is x
    with s4tf.training():
        assert layers.StochasticDepth(0.0)(x) is x


def test_row_mode_drops_whole_examples_and_keeps_the_expectation():
    s4tf.random.seed(0)
    x = s4tf.ones([4000, 2, 3], dtype=s4tf.float64)
    with s4tf.training():
        y = layers.StochasticDepth(probability=0.3, mode="row")(x).numpy()
    rows = y.reshape(4000, -1)
    assert (rows == rows[:, :1]).all()                     # one decision per example
    assert set(np.unique(rows)) == {0.0, 1 / 0.7}
    assert (rows[:, 0] == 0).mean() == pytest.approx(0.3, abs=0.03)
    assert rows.mean() == pytest.approx(1.0, abs=0.04)     # E[y] = x


def test_batch_mode_drops_the_whole_batch_at_once():
    s4tf.random.seed(1)
    layer = layers.StochasticDepth(probability=0.25, mode="batch")
    x = s4tf.ones([3, 4], dtype=s4tf.float64)
    outcomes = []
    with s4tf.training():
        for _ in range(400):
            y = layer(x).numpy()
            assert len(np.unique(y)) == 1
            outcomes.append(y[0, 0])
    assert set(outcomes) == {0.0, 1 / 0.75}
    assert np.mean(outcomes) == pytest.approx(1.0, abs=0.1)


def test_probability_one_always_drops():
    with s4tf.training():
        assert layers.StochasticDepth(1.0)(s4tf.ones([5, 2])).tolist() == [[0.0, 0.0]] * 5


def test_draws_follow_the_seed():
    x = s4tf.ones([64, 3])
    layer = layers.StochasticDepth(0.5)
    with s4tf.training():
        s4tf.random.seed(7)
        first = layer(x).numpy()
        s4tf.random.seed(7)
        again = layer(x).numpy()
    np.testing.assert_array_equal(first, again)


def test_gradient_is_the_row_mask_scaled(backend):
    x = s4tf.random.normal([6, 2, 2, 3], dtype=s4tf.float64, seed=2)
    layer = layers.StochasticDepth(0.5)

    def f(t):
        s4tf.random.seed(3)  # the same draw at every finite-difference point
        return layer(t)

    with s4tf.training():
        check_gradients(f, x)
        grad = s4tf.gradient(x, of=lambda t: f(t).sum()).numpy()
    per_row = grad.reshape(6, -1)
    assert set(np.unique(per_row)) <= {0.0, 2.0} and (per_row == per_row[:, :1]).all()
    with s4tf.inference():
        check_gradients(layer, x)  # the identity


def test_differentiating_in_the_default_phase_warns_as_dropout_does(monkeypatch):
    import sys

    monkeypatch.setattr(sys.modules["s4tf.learning_phase"], "_warned_sites", set())
    layer = layers.StochasticDepth(0.2)
    with pytest.warns(s4tf.InferencePhaseWarning,
                      match="StochasticDepth is being differentiated .* passes its input"):
        s4tf.gradient(s4tf.ones([2, 3]), of=lambda x: layer(x).sum())


def test_validation():
    with pytest.raises(ValueError, match=r"probability must be in \[0, 1\], got 1.5"):
        layers.StochasticDepth(1.5)
    with pytest.raises(ValueError, match="mode must be 'row' or 'batch', got 'column'"):
        layers.StochasticDepth(0.1, mode="column")
    assert layers.StochasticDepth.TangentVector._s4tf_field_names == ()
