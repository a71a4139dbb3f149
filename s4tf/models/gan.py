"""Generative adversarial networks: swift-models' dense GAN and its DCGAN (NHWC)."""

from __future__ import annotations

from .. import layers
from .. import random as _random
from ..activations import identity, leaky_relu, tanh
from ..creation import ones_like, zeros_like
from ..differentiable import no_derivative
from ..layers import Layer
from ..layers.layer import check_input_shape
from ..losses import sigmoid_cross_entropy
from ..ops import reshape
from ..ops.shapes import shape_of
from ..tensor import from_numpy
from ..tree import tree_leaves

__all__ = ["DCGAN", "DCGANDiscriminator", "DCGANGenerator", "GAN", "GANDiscriminator",
           "GANGenerator", "discriminator_loss", "generator_loss"]


def generator_loss(fake_logits):
    """The generator's loss: ``sigmoid_cross_entropy`` of the fakes against label 1.

    ``fake_logits`` is the discriminator's output on generated images; the
    generator wants them judged real (the non-saturating loss of Goodfellow et
    al. 2014, as swift-models).

    Examples
    --------
    >>> import s4tf
    >>> round(s4tf.models.generator_loss(s4tf.zeros([4, 1])).item(), 4)
    0.6931
    """
    return sigmoid_cross_entropy(logits=fake_logits, labels=ones_like(fake_logits))


def discriminator_loss(real_logits, fake_logits):
    """The discriminator's loss: real images against label 1 plus fakes against label 0.

    Examples
    --------
    >>> import s4tf
    >>> round(s4tf.models.discriminator_loss(s4tf.zeros([4, 1]), s4tf.zeros([4, 1])).item(), 4)
    1.3863
    """
    return (sigmoid_cross_entropy(logits=real_logits, labels=ones_like(real_logits))
            + sigmoid_cross_entropy(logits=fake_logits, labels=zeros_like(fake_logits)))


class _Adversarial(Layer):
    """What GAN and DCGAN share: noise for the generator, the losses, and ``__call__``."""

    latent_size: int = no_derivative()

    generator_loss = staticmethod(generator_loss)
    discriminator_loss = staticmethod(discriminator_loss)

    def noise(self, batch_size: int, seed: int | None = None):
        """Generator inputs: ``(batch_size, latent_size)`` draws from N(0, 1).

        From ``s4tf.random`` (``seed`` for a fresh stream), on the model's backend.
        """
        like = tree_leaves(self.generator, differentiable=True)[0]
        draws = _random.generator(seed).standard_normal((batch_size, self.latent_size))
        return from_numpy(draws, like.dtype, like=like)

    def __call__(self, noise):
        """Generated images for ``noise`` ``(batch, latent_size)`` (``generator(noise)``)."""
        return self.generator(noise)


class GANGenerator(Layer):
    """swift-models' dense GAN generator: noise to flat images in ``[-1, 1]``.

    Dense ``latent -> 2 latent -> 4 latent -> 8 latent``, each with leaky relu
    (alpha 0.2) followed by BatchNorm, then dense to ``image_size`` with tanh.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.models.GANGenerator()(s4tf.zeros([3, 64])).shape
    (3, 784)
    """

    dense1: layers.Dense
    batchnorm1: layers.BatchNorm
    dense2: layers.Dense
    batchnorm2: layers.BatchNorm
    dense3: layers.Dense
    batchnorm3: layers.BatchNorm
    dense4: layers.Dense

    def __init__(self, latent_size: int = 64, image_size: int = 784):
        self.dense1 = layers.Dense(latent_size, latent_size * 2, activation=leaky_relu)
        self.batchnorm1 = layers.BatchNorm(latent_size * 2)
        self.dense2 = layers.Dense(latent_size * 2, latent_size * 4, activation=leaky_relu)
        self.batchnorm2 = layers.BatchNorm(latent_size * 4)
        self.dense3 = layers.Dense(latent_size * 4, latent_size * 8, activation=leaky_relu)
        self.batchnorm3 = layers.BatchNorm(latent_size * 8)
        self.dense4 = layers.Dense(latent_size * 8, image_size, activation=tanh)

    def __call__(self, noise):
        return noise.sequenced(self.dense1, self.batchnorm1, self.dense2, self.batchnorm2,
                               self.dense3, self.batchnorm3, self.dense4)


class GANDiscriminator(Layer):
    """swift-models' dense GAN discriminator: flat images to one logit (real vs fake).

    Dense ``image_size -> 256 -> 64 -> 16`` with leaky relu, then ``-> 1``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.models.GANDiscriminator()(s4tf.zeros([3, 784])).shape
    (3, 1)
    """

    dense1: layers.Dense
    dense2: layers.Dense
    dense3: layers.Dense
    dense4: layers.Dense

    def __init__(self, image_size: int = 784):
        self.dense1 = layers.Dense(image_size, 256, activation=leaky_relu)
        self.dense2 = layers.Dense(256, 64, activation=leaky_relu)
        self.dense3 = layers.Dense(64, 16, activation=leaky_relu)
        self.dense4 = layers.Dense(16, 1, activation=identity)

    def __call__(self, images):
        return images.sequenced(self.dense1, self.dense2, self.dense3, self.dense4)


class GAN(_Adversarial):
    """swift-models' dense GAN: a :class:`GANGenerator` and a :class:`GANDiscriminator`.

    The generator maps N(0, 1) noise ``(batch, latent_size)`` to flattened
    images ``(batch, image_size)`` in ``[-1, 1]`` (scale real images to match);
    the discriminator maps images to one logit each. Train them in turns with
    two optimizers (swift-models: Adam, learning rate 2e-4, beta1 0.5), the
    generator's model being ``gan.generator`` and the discriminator's
    ``gan.discriminator``::

        z = gan.noise(batch)
        g = s4tf.gradient(gan.generator, of=lambda g: GAN.generator_loss(
            gan.discriminator(g(z))))
        d = s4tf.gradient(gan.discriminator, of=lambda d: GAN.discriminator_loss(
            d(real), d(gan.generator(z))))

    Keep the two parts in their own variables while training (each has its
    own optimizer) and join them for a checkpoint with ``s4tf.replace(gan,
    generator=generator, discriminator=discriminator)``; run the generator's
    step inside ``with s4tf.training():`` so its BatchNorms use batch
    statistics. ``gan(noise)`` is ``gan.generator(noise)``; summarise the
    parts separately (``s4tf.summary(gan.discriminator, (1, 784))``). The
    default (latent 64, 28x28 images) has 576,912 + 218,465 = 795,377
    parameters (BatchNorm running statistics excluded).

    Parameters
    ----------
    latent_size : int, default 64
    image_size : int, default 784
        Features of a flattened image (height * width * channels).

    References
    ----------
    Goodfellow et al., "Generative Adversarial Nets" (2014);
    swift-models ``GAN/main.swift``.

    Examples
    --------
    >>> import s4tf
    >>> gan = s4tf.models.GAN()
    >>> fakes = gan(gan.noise(4, seed=0))
    >>> fakes.shape, gan.discriminator(fakes).shape
    ((4, 784), (4, 1))
    >>> s4tf.parameter_count(gan)
    795377
    """

    generator: GANGenerator
    discriminator: GANDiscriminator

    def __init__(self, latent_size: int = 64, image_size: int = 784):
        self.generator = GANGenerator(latent_size, image_size)
        self.discriminator = GANDiscriminator(image_size)
        self.latent_size = latent_size


class DCGANGenerator(Layer):
    """swift-models' DCGAN generator: noise to NHWC images in ``[-1, 1]``.

    Dense ``latent -> (s/4)^2 * 256`` reshaped to ``(s/4, s/4, 256)``, then
    5x5 transposed convolutions to 128 (stride 1), 64 (stride 2) and
    ``channels`` (stride 2) filters, "same" padding. BatchNorm and leaky relu
    follow the dense layer and the first two transposed convolutions; tanh
    the last.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.models.DCGANGenerator(latent_size=8, image_size=8)(s4tf.zeros([2, 8])).shape
    (2, 8, 8, 1)
    """

    dense: layers.Dense
    batchnorm1: layers.BatchNorm
    transposed_conv1: layers.TransposedConv2D
    batchnorm2: layers.BatchNorm
    transposed_conv2: layers.TransposedConv2D
    batchnorm3: layers.BatchNorm
    transposed_conv3: layers.TransposedConv2D
    seed_size: int = no_derivative()

    def __init__(self, latent_size: int = 100, image_size: int = 28, channels: int = 1):
        if image_size % 4:
            raise ValueError(f"DCGANGenerator: image_size must be a multiple of 4 (two "
                             f"stride-2 upsamplings); received image_size={image_size}.")
        seed = image_size // 4
        self.dense = layers.Dense(latent_size, seed * seed * 256)
        self.batchnorm1 = layers.BatchNorm(256)
        self.transposed_conv1 = layers.TransposedConv2D(filter_shape=(5, 5, 128, 256),
                                                        strides=1, padding="same")
        self.batchnorm2 = layers.BatchNorm(128)
        self.transposed_conv2 = layers.TransposedConv2D(filter_shape=(5, 5, 64, 128),
                                                        strides=2, padding="same")
        self.batchnorm3 = layers.BatchNorm(64)
        self.transposed_conv3 = layers.TransposedConv2D(filter_shape=(5, 5, channels, 64),
                                                        strides=2, padding="same",
                                                        activation=tanh)
        self.seed_size = seed

    def __call__(self, noise):
        batch = shape_of(noise)[0]
        x = reshape(self.dense(noise), (batch, self.seed_size, self.seed_size, 256))
        x = leaky_relu(self.batchnorm1(x))
        x = leaky_relu(self.batchnorm2(self.transposed_conv1(x)))
        x = leaky_relu(self.batchnorm3(self.transposed_conv2(x)))
        return self.transposed_conv3(x)


class DCGANDiscriminator(Layer):
    """swift-models' DCGAN discriminator: NHWC images to one logit each.

    5x5 convolutions with stride 2 ("same") to 64 and 128 filters, each
    followed by leaky relu and dropout (0.3, training only), then a dense
    layer on the flattened ``(s/4, s/4, 128)`` features.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.models.DCGANDiscriminator(image_size=8)(s4tf.zeros([2, 8, 8, 1])).shape
    (2, 1)
    """

    conv1: layers.Conv2D
    conv2: layers.Conv2D
    dropout: layers.Dropout
    flatten: layers.Flatten
    dense: layers.Dense
    image_size: int = no_derivative()

    def __init__(self, image_size: int = 28, channels: int = 1):
        if image_size % 4:
            raise ValueError(f"DCGANDiscriminator: image_size must be a multiple of 4; received "
                             f"image_size={image_size}.")
        self.conv1 = layers.Conv2D(filter_shape=(5, 5, channels, 64), strides=2, padding="same")
        self.conv2 = layers.Conv2D(filter_shape=(5, 5, 64, 128), strides=2, padding="same")
        self.dropout = layers.Dropout(0.3)
        self.flatten = layers.Flatten()
        self.dense = layers.Dense((image_size // 4) ** 2 * 128, 1)
        self.image_size = image_size

    def __call__(self, images):
        channels = shape_of(self.conv1.filter)[2]
        check_input_shape(self, images, (None, self.image_size, self.image_size, channels),
                          "Pass NHWC images of the size the discriminator was built for.")
        x = self.dropout(leaky_relu(self.conv1(images)))
        x = self.dropout(leaky_relu(self.conv2(x)))
        return self.dense(self.flatten(x))


class DCGAN(_Adversarial):
    """swift-models' DCGAN (Radford et al. 2016): convolutional generator and discriminator.

    :class:`DCGANGenerator` maps N(0, 1) noise ``(batch, latent_size)`` to
    NHWC images ``(batch, image_size, image_size, channels)`` in ``[-1, 1]``;
    :class:`DCGANDiscriminator` maps images to one logit each. Train as
    :class:`GAN` (swift-models: Adam with learning rate 1e-4 for both;
    ``DCGAN.generator_loss`` and ``DCGAN.discriminator_loss``). Run the
    generator's step inside ``with s4tf.training():`` so its BatchNorms use
    batch statistics.

    Unlike swift-models, whose BatchNorms normalise each flattened
    (position, channel) feature separately (e.g. 7*7*256 of them), these
    normalise each channel over the batch and all positions, as Radford et
    al. and TensorFlow's DCGAN tutorial (which swift-models ported) do: 2,293,633
    generator parameters instead of swift-models' 2,355,457 for 28x28x1, the
    discriminator's 212,865 being the same.

    Parameters
    ----------
    latent_size : int, default 100
    image_size : int, default 28
        Height and width; a multiple of 4.
    channels : int, default 1

    References
    ----------
    Radford, Metz and Chintala, "Unsupervised Representation
    Learning with Deep Convolutional GANs" (2016); swift-models
    ``DCGAN/main.swift``.

    Examples
    --------
    >>> import s4tf
    >>> gan = s4tf.models.DCGAN(latent_size=16, image_size=8)
    >>> fakes = gan(gan.noise(2, seed=0))
    >>> fakes.shape, gan.discriminator(fakes).shape
    ((2, 8, 8, 1), (2, 1))
    >>> s4tf.parameter_count(s4tf.models.DCGAN())
    2506498
    """

    generator: DCGANGenerator
    discriminator: DCGANDiscriminator

    def __init__(self, latent_size: int = 100, image_size: int = 28, channels: int = 1):
        self.generator = DCGANGenerator(latent_size, image_size, channels)
        self.discriminator = DCGANDiscriminator(image_size, channels)
        self.latent_size = latent_size
