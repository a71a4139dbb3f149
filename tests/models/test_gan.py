"""s4tf.models.GAN and DCGAN: layouts, counts, shapes, BatchNorm phases, one step."""

from __future__ import annotations

import numpy as np
import pytest
from generative_steps import assert_step_agrees

import s4tf
from s4tf.models import DCGAN, GAN, discriminator_loss, generator_loss


def test_gan_matches_swift_models_gan():
    gan = GAN()
    g, d = gan.generator, gan.discriminator
    assert [layer.weight.shape for layer in (g.dense1, g.dense2, g.dense3, g.dense4)] == [
        (64, 128), (128, 256), (256, 512), (512, 784)]
    assert [layer.weight.shape for layer in (d.dense1, d.dense2, d.dense3, d.dense4)] == [
        (784, 256), (256, 64), (64, 16), (16, 1)]
    assert s4tf.parameter_count(g) == 576_912
    assert s4tf.parameter_count(d) == 218_465
    assert s4tf.parameter_count(gan) == 795_377


def test_gan_output_shapes_and_range():
    gan = GAN(latent_size=8, image_size=36)
    noise = gan.noise(5, seed=0)
    assert noise.shape == (5, 8)
    fakes = gan(noise)
    assert fakes.shape == (5, 36) and np.abs(fakes.numpy()).max() <= 1.0
    assert gan.discriminator(fakes).shape == (5, 1)
    np.testing.assert_array_equal(gan.noise(5, seed=0).numpy(), noise.numpy())


def test_dcgan_matches_swift_models_dcgan_with_channel_batchnorm():
    gan = DCGAN()
    g, d = gan.generator, gan.discriminator
    assert g.dense.weight.shape == (100, 7 * 7 * 256)
    assert g.transposed_conv1.filter.shape == (5, 5, 128, 256)
    assert g.transposed_conv2.filter.shape == (5, 5, 64, 128)
    assert g.transposed_conv3.filter.shape == (5, 5, 1, 64)
    assert d.conv1.filter.shape == (5, 5, 1, 64) and d.conv2.filter.shape == (5, 5, 64, 128)
    assert d.dense.weight.shape == (6272, 1) and d.dropout.probability == 0.3
    assert s4tf.parameter_count(d) == 212_865
    # swift-models normalises 7*7*256 + 7*7*128 + 14*14*64 flattened features;
    # per-channel BatchNorm has (256 + 128 + 64) * 2 parameters instead.
    swift_models_generator = s4tf.parameter_count(g) - 2 * (256 + 128 + 64) + 2 * (
        7 * 7 * 256 + 7 * 7 * 128 + 14 * 14 * 64)
    assert swift_models_generator == 2_355_457
    assert s4tf.parameter_count(g) == 2_293_633
    assert s4tf.parameter_count(gan) == 2_506_498


@pytest.mark.parametrize("size, channels", [(8, 1), (12, 3)])
def test_dcgan_output_shapes(size, channels):
    gan = DCGAN(latent_size=6, image_size=size, channels=channels)
    fakes = gan(gan.noise(2, seed=1))
    assert fakes.shape == (2, size, size, channels)
    assert np.abs(fakes.numpy()).max() <= 1.0
    assert gan.discriminator(fakes).shape == (2, 1)


def test_dcgan_rejects_sizes_that_are_not_multiples_of_4():
    with pytest.raises(ValueError, match="multiple of 4"):
        DCGAN(image_size=30)
    with pytest.raises(ValueError, match=r"expected an input of shape \(\?, 8, 8, 1\)"):
        DCGAN(image_size=8).discriminator(s4tf.zeros([1, 12, 12, 1]))


@pytest.mark.parametrize("make", [lambda: GAN(latent_size=4, image_size=9),
                                  lambda: DCGAN(latent_size=4, image_size=4)])
def test_batchnorm_statistics_move_only_in_training(make):
    gan = make()
    noise = gan.noise(3, seed=2)

    norms = [getattr(gan.generator, name) for name in ("batchnorm1", "batchnorm2", "batchnorm3")]

    def statistics():
        return [cell.value.numpy().copy() for bn in norms
                for cell in (bn.running_mean, bn.running_variance)]

    before = statistics()
    assert before, "the generator has BatchNorm running statistics"
    gan(noise)
    assert all(np.array_equal(a, b) for a, b in zip(before, statistics(), strict=True))
    with s4tf.training():
        gan(noise)
    assert any(not np.array_equal(a, b) for a, b in zip(before, statistics(), strict=True))


def test_losses_are_swift_models_sigmoid_cross_entropies():
    real = s4tf.Tensor([[2.0], [-1.0]])
    fake = s4tf.Tensor([[0.5], [-3.0]])

    def bce(logits, label):
        return np.mean(np.logaddexp(0, logits) - logits * label)

    np.testing.assert_allclose(generator_loss(fake).item(), bce(fake.numpy(), 1.0), rtol=1e-6)
    np.testing.assert_allclose(discriminator_loss(real, fake).item(),
                               bce(real.numpy(), 1.0) + bce(fake.numpy(), 0.0), rtol=1e-6)
    assert GAN.generator_loss is DCGAN.generator_loss is generator_loss


def _adversarial_loss(gan, noise, real):
    # Both players' losses in one scalar, so one step moves every weight.
    fake_logits = gan.discriminator(gan.generator(noise))
    return generator_loss(fake_logits) + discriminator_loss(gan.discriminator(real), fake_logits)


def test_gan_one_step_agrees_on_naive_and_xla():
    s4tf.random.seed(3)
    gan = GAN(latent_size=4, image_size=9)
    rng = np.random.default_rng(0)
    noise = rng.normal(size=(5, 4)).astype(np.float32)
    real = rng.uniform(-1, 1, size=(5, 9)).astype(np.float32)
    assert_step_agrees(gan, _adversarial_loss, noise, real, training=True)


def test_dcgan_one_step_agrees_on_naive_and_xla():
    s4tf.random.seed(4)
    gan = DCGAN(latent_size=4, image_size=4)
    rng = np.random.default_rng(1)
    noise = rng.normal(size=(3, 4)).astype(np.float32)
    real = rng.uniform(-1, 1, size=(3, 4, 4, 1)).astype(np.float32)
    assert_step_agrees(gan, _adversarial_loss, noise, real, training=True)


def test_summaries_run(capsys):
    gan = DCGAN()
    s4tf.summary(gan.generator, (2, 100))
    s4tf.summary(gan.discriminator, (2, 28, 28, 1))
    s4tf.summary(GAN(), (2, 64))
    out = capsys.readouterr().out
    assert "2,293,633" in out and "212,865" in out and "795,377" in out
