"""The model zoo: plain :class:`s4tf.Layer` dataclasses, trained by ``examples/``.

Examples
--------
>>> import s4tf
>>> s4tf.models.LeNet()(s4tf.zeros([1, 28, 28, 1])).shape
(1, 10)
"""

from .autoencoder import Autoencoder, Autoencoder2D
from .gan import (
    DCGAN,
    GAN,
    DCGANDiscriminator,
    DCGANGenerator,
    GANDiscriminator,
    GANGenerator,
    discriminator_loss,
    generator_loss,
)
from .gpt2_weights import load_gpt2
from .lenet import LeNet
from .neumf import NeuMF
from .transformer import CausalSelfAttention, TransformerBlock, TransformerLM
from .vae import VAE, VAEOutput, vae_loss

__all__ = [
    "DCGAN", "GAN", "VAE", "Autoencoder", "Autoencoder2D", "CausalSelfAttention",
    "DCGANDiscriminator", "DCGANGenerator", "GANDiscriminator", "GANGenerator", "LeNet", "NeuMF",
    "TransformerBlock", "TransformerLM", "VAEOutput", "discriminator_loss", "generator_loss",
    "load_gpt2", "vae_loss",
]
