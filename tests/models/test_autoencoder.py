"""s4tf.models.Autoencoder and Autoencoder2D: layouts, counts, shapes, one step."""

from __future__ import annotations

import numpy as np
import pytest
from generative_steps import assert_step_agrees

import s4tf
from s4tf.models import Autoencoder, Autoencoder2D


def test_autoencoder_matches_swift_models_autoencoder1d():
    model = Autoencoder()
    assert [d.weight.shape for d in model.encoder] == [(784, 128), (128, 64), (64, 12), (12, 3)]
    assert [d.weight.shape for d in model.decoder] == [(3, 12), (12, 64), (64, 128), (128, 784)]
    # swift-models' Sequential of eight Dense layers: 219,891 parameters.
    assert s4tf.parameter_count(model) == 219_891
    assert model.decoder[-1].activation is s4tf.tanh
    assert all(d.activation is s4tf.relu for d in model.encoder + model.decoder[:-1])


def test_autoencoder_encode_decode_shapes():
    s4tf.random.seed(0)
    model = Autoencoder(input_size=20, hidden_sizes=(8,), code_size=2)
    x = s4tf.random.uniform([5, 20], low=-1.0, high=1.0)
    code = model.encode(x)
    assert code.shape == (5, 2)
    out = model(x)
    assert out.shape == (5, 20)
    np.testing.assert_array_equal(out.numpy(), model.decode(code).numpy())
    assert np.abs(out.numpy()).max() <= 1.0


def test_autoencoder_rejects_bad_sizes():
    with pytest.raises(ValueError, match="positive ints"):
        Autoencoder(code_size=0)


def test_autoencoder_one_step_agrees_on_naive_and_xla():
    s4tf.random.seed(1)
    model = Autoencoder(input_size=12, hidden_sizes=(8, 4), code_size=2)
    x = np.random.default_rng(0).uniform(-1, 1, size=(6, 12)).astype(np.float32)
    assert_step_agrees(model, lambda m, x: s4tf.mean_squared_error(predicted=m(x), expected=x), x)


def test_autoencoder2d_matches_swift_models_for_28x28():
    model = Autoencoder2D()
    assert s4tf.parameter_count(model) == 4_385
    assert model.decoder5.padding == "valid"
    x = s4tf.random.uniform([2, 28, 28, 1], seed=0)
    assert model.encode(x).shape == (2, 4, 4, 8)
    out = model(x)
    assert out.shape == (2, 28, 28, 1)
    assert 0.0 <= out.numpy().min() and out.numpy().max() <= 1.0


@pytest.mark.parametrize("size", [8, 32, 64])
def test_autoencoder2d_takes_multiples_of_8(size):
    model = Autoencoder2D(image_size=size, channels=3)
    assert model(s4tf.zeros([1, size, size, 3])).shape == (1, size, size, 3)


def test_autoencoder2d_rejects_sizes_it_cannot_reconstruct():
    with pytest.raises(ValueError, match="cannot reconstruct 30x30 images"):
        Autoencoder2D(image_size=30)
    with pytest.raises(ValueError, match=r"expected an input of shape \(\?, 28, 28, 1\)"):
        Autoencoder2D()(s4tf.zeros([1, 32, 32, 1]))


def test_autoencoder2d_one_step_agrees_on_naive_and_xla():
    s4tf.random.seed(2)
    model = Autoencoder2D(image_size=8)
    x = np.random.default_rng(0).uniform(0, 1, size=(2, 8, 8, 1)).astype(np.float32)
    assert_step_agrees(model, lambda m, x: s4tf.mean_squared_error(predicted=m(x), expected=x), x)


def test_summaries_run(capsys):
    s4tf.summary(Autoencoder(), (2, 784))
    s4tf.summary(Autoencoder2D(), (2, 28, 28, 1))
    out = capsys.readouterr().out
    assert "219,891" in out and "4,385" in out
