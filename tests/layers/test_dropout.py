"""Dropout variants: identity in inference, the right statistics in training."""

import numpy as np
import pytest

import s4tf
from s4tf import layers


@pytest.mark.parametrize("layer", [layers.Dropout(0.5), layers.GaussianNoise(0.3),
                                   layers.GaussianDropout(0.3), layers.AlphaDropout(0.2)],
                         ids=lambda layer: type(layer).__name__)
def test_identity_in_inference(layer):
    x = s4tf.random.normal([50], seed=0)
    assert layer(x) is x


def test_dropout_scales_kept_elements_in_training():
    s4tf.random.seed(0)
    x = s4tf.ones([20000], dtype=s4tf.float64)
    with s4tf.training():
        y = layers.Dropout(probability=0.25)(x).numpy()
    assert set(np.unique(y)) == {0.0, 1 / 0.75}
    assert (y == 0).mean() == pytest.approx(0.25, abs=0.01)
    assert y.mean() == pytest.approx(1.0, abs=0.02)


def test_dropout_gradient_is_the_mask_scaled():
    s4tf.random.seed(1)
    x = s4tf.ones([1000], dtype=s4tf.float64)
    with s4tf.training():
        value, grad = s4tf.value_with_gradient(x, of=lambda t: layers.Dropout(0.5)(t).sum())
    np.testing.assert_array_equal(grad.numpy(), np.where(grad.numpy() > 0, 2.0, 0.0))
    assert value.item() == pytest.approx(grad.numpy().sum())


def test_noise_layers_statistics_in_training():
    s4tf.random.seed(2)
    x = s4tf.zeros([20000], dtype=s4tf.float64)
    with s4tf.training():
        noise = layers.GaussianNoise(standard_deviation=0.5)(x).numpy()
        mult = layers.GaussianDropout(probability=0.2)(x + 1.0).numpy()
        alpha = layers.AlphaDropout(probability=0.2)(s4tf.random.normal([20000], dtype=s4tf.float64)).numpy()
    assert noise.std() == pytest.approx(0.5, rel=0.03) and abs(noise.mean()) < 0.02
    assert mult.mean() == pytest.approx(1.0, abs=0.02) and mult.var() == pytest.approx(0.25, rel=0.05)
    # AlphaDropout keeps zero mean and unit variance of a standard normal input.
    assert abs(alpha.mean()) < 0.03 and alpha.var() == pytest.approx(1.0, rel=0.05)


def test_probability_is_validated():
    with pytest.raises(ValueError, match=r"probability must be in \[0, 1\), got 1.0"):
        layers.Dropout(1.0)
    assert "probability" not in layers.Dropout.TangentVector._s4tf_field_names
