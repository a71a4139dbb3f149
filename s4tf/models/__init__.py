"""The model zoo: plain :class:`s4tf.Layer` dataclasses, trained by ``examples/``.

Examples
--------
>>> import s4tf
>>> s4tf.models.LeNet()(s4tf.zeros([1, 28, 28, 1])).shape
(1, 10)
"""

from .autoencoder import Autoencoder, Autoencoder2D
from .densenet import DenseNet, DenseNet121
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
from .resnet import ResNet
from .resnet_v2 import ResNetV2
from .shufflenet_v2 import ShuffleNetV2
from .squeezenet import SqueezeNet
from .torchvision_weights import load_torchvision
from .transformer import CausalSelfAttention, TransformerBlock, TransformerLM
from .vae import VAE, VAEOutput, vae_loss
from .vgg import VGG
from .wide_resnet import WideResNet

__all__ = [
    "DCGAN", "GAN", "VAE", "VGG", "Autoencoder", "Autoencoder2D", "CausalSelfAttention",
    "DCGANDiscriminator", "DCGANGenerator", "DenseNet", "DenseNet121", "EfficientNet",
    "GANDiscriminator", "GANGenerator", "LeNet", "MobileNetV1", "MobileNetV2", "MobileNetV3",
    "NeuMF", "ResNet", "ResNetV2", "ShuffleNetV2", "SqueezeNet", "TransformerBlock",
    "TransformerLM", "VAEOutput", "WideResNet", "discriminator_loss", "generator_loss",
    "load_gpt2", "load_torchvision", "vae_loss",
]
