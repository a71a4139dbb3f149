"""s4tf.models.VAE: layout, reparameterisation, the negative ELBO, one step."""

from __future__ import annotations

import numpy as np
import pytest
from generative_steps import assert_step_agrees

import s4tf
from s4tf.models import VAE, vae_loss
from s4tf.testing import check_gradients


def test_vae_matches_swift_models_vae1d():
    model = VAE()
    assert model.encoder.weight.shape == (784, 400)
    assert model.mean_head.weight.shape == model.log_variance_head.weight.shape == (400, 20)
    assert model.decoder_hidden.weight.shape == (20, 400)
    assert model.decoder_output.weight.shape == (400, 784)
    assert s4tf.parameter_count(model) == 652_824


def test_vae_returns_what_the_elbo_needs():
    s4tf.random.seed(0)
    model = VAE(input_size=10, hidden_size=6, latent_size=3)
    x = s4tf.random.uniform([4, 10])
    out = model(x, seed=1)
    assert out.logits.shape == (4, 10)
    assert out.mean.shape == out.log_variance.shape == out.code.shape == (4, 3)
    mean, log_variance = model.encode(x)
    np.testing.assert_allclose(out.mean.numpy(), mean.numpy())
    # The code is mean + exp(log_variance / 2) * eps with eps ~ N(0, 1) from the seed.
    eps = np.random.default_rng(1).standard_normal((4, 3))
    np.testing.assert_allclose(out.code.numpy(),
                               mean.numpy() + np.exp(log_variance.numpy() / 2) * eps, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(out.logits.numpy(), model.decode(out.code).numpy(), rtol=1e-6)


def test_draws_are_seedable_and_differ_without_a_seed():
    model = VAE(input_size=6, hidden_size=4, latent_size=2)
    x = s4tf.zeros([3, 6])
    np.testing.assert_array_equal(model(x, seed=5).code.numpy(), model(x, seed=5).code.numpy())
    s4tf.random.seed(0)
    first = model(x).code.numpy()
    second = model(x).code.numpy()
    assert not np.array_equal(first, second)
    s4tf.random.seed(0)
    np.testing.assert_array_equal(model(x).code.numpy(), first)


def test_vae_loss_is_the_negative_elbo():
    s4tf.random.seed(3)
    model = VAE(input_size=5, hidden_size=4, latent_size=2)
    x = s4tf.random.uniform([3, 5])
    out = model(x, seed=0)
    logits, xs = out.logits.numpy().astype(np.float64), x.numpy().astype(np.float64)
    mu, logvar = out.mean.numpy().astype(np.float64), out.log_variance.numpy().astype(np.float64)
    bce = (np.logaddexp(0, logits) - logits * xs).sum(axis=1)
    kl = -0.5 * (1 + logvar - mu ** 2 - np.exp(logvar)).sum(axis=1)
    np.testing.assert_allclose(vae_loss(out, x, reduction="none").numpy(), bce + kl, rtol=1e-5)
    np.testing.assert_allclose(vae_loss(out, x).item(), (bce + kl).mean(), rtol=1e-5)
    np.testing.assert_allclose(vae_loss(out, x, reduction="sum").item(), (bce + kl).sum(),
                               rtol=1e-5)
    with pytest.raises(ValueError, match="reduction must be"):
        vae_loss(out, x, reduction="max")


def test_reparameterisation_gradients_reach_the_encoder():
    s4tf.random.seed(4)
    model = VAE(input_size=6, hidden_size=5, latent_size=2)
    x = s4tf.random.uniform([4, 6])
    grads = s4tf.gradient(model, of=lambda m: vae_loss(m(x, seed=0), x))
    for name in ("encoder", "mean_head", "log_variance_head", "decoder_hidden", "decoder_output"):
        assert np.abs(getattr(grads, name).weight.numpy()).sum() > 0, name
    # Through the sampled code alone (no KL term), the log-variance head still
    # gets a gradient: the noise multiplies exp(log_variance / 2).
    only_reconstruction = s4tf.gradient(
        model, of=lambda m: s4tf.sigmoid_cross_entropy(logits=m(x, seed=0).logits, labels=x))
    assert np.abs(only_reconstruction.log_variance_head.weight.numpy()).sum() > 0


def test_elbo_gradient_matches_finite_differences():
    # The whole model in float64, the same draw at every evaluation (seed=0):
    # the ELBO's gradient through the reparameterised sample is checked against
    # central differences, for every weight and the input.
    s4tf.random.seed(6)
    model = s4tf.tree_map(lambda t: t.astype(s4tf.float64),
                          VAE(input_size=4, hidden_size=3, latent_size=2), differentiable=True)
    x = s4tf.Tensor(np.random.default_rng(0).uniform(0.1, 0.9, size=(2, 4)))
    check_gradients(lambda m, x: vae_loss(m(x, seed=0), x), model, x)


def test_vae_one_step_agrees_on_naive_and_xla():
    s4tf.random.seed(5)
    model = VAE(input_size=12, hidden_size=8, latent_size=3)
    x = np.random.default_rng(0).uniform(0, 1, size=(4, 12)).astype(np.float32)
    assert_step_agrees(model, lambda m, x: vae_loss(m(x, seed=9), x), x)


def test_summary_runs(capsys):
    s4tf.summary(VAE(), (2, 784))
    assert "652,824" in capsys.readouterr().out
