"""The model zoo: plain :class:`s4tf.Layer` dataclasses, trained by ``examples/``.

Examples
--------
>>> import s4tf
>>> s4tf.models.LeNet()(s4tf.zeros([1, 28, 28, 1])).shape
(1, 10)
"""

from .lenet import LeNet
from .resnet import ResNet
from .torchvision_weights import load_torchvision
from .vgg import VGG

__all__ = ["LeNet", "ResNet", "VGG", "load_torchvision"]
