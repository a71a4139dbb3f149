"""The model zoo: plain :class:`s4tf.Layer` dataclasses, trained by ``examples/``.

Examples
--------
>>> import s4tf
>>> s4tf.models.LeNet()(s4tf.zeros([1, 28, 28, 1])).shape
(1, 10)
"""

from .autoencoder import Autoencoder, Autoencoder2D
from .efficientnet import EfficientNet
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
from .mobilenet_v1 import MobileNetV1
from .mobilenet_v2 import MobileNetV2
from .mobilenet_v3 import MobileNetV3
from .neumf import NeuMF
from .shufflenet_v2 import ShuffleNetV2
from .squeezenet import SqueezeNet
from .transformer import CausalSelfAttention, TransformerBlock, TransformerLM
from .vae import VAE, VAEOutput, vae_loss

__all__ = [
    "DCGAN", "GAN", "VAE", "Autoencoder", "Autoencoder2D", "CausalSelfAttention",
    "DCGANDiscriminator", "DCGANGenerator", "EfficientNet", "GANDiscriminator", "GANGenerator",
    "LeNet", "MobileNetV1", "MobileNetV2", "MobileNetV3", "NeuMF", "ShuffleNetV2", "SqueezeNet",
    "TransformerBlock", "TransformerLM", "VAEOutput", "discriminator_loss", "generator_loss",
    "load_gpt2", "vae_loss",
]
