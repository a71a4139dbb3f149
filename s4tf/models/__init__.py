"""The model zoo: plain :class:`s4tf.Layer` dataclasses, trained by ``examples/``.

Examples
--------
>>> import s4tf
>>> s4tf.models.LeNet()(s4tf.zeros([1, 28, 28, 1])).shape
(1, 10)
"""

from .densenet import DenseNet, DenseNet121
from .lenet import LeNet
from .resnet import ResNet
from .resnet_v2 import ResNetV2
from .torchvision_weights import load_torchvision
from .vgg import VGG
from .wide_resnet import WideResNet

__all__ = ["DenseNet", "DenseNet121", "LeNet", "ResNet", "ResNetV2", "VGG", "WideResNet", "load_torchvision"]
