"""ResNet (He et al. 2016): torchvision's ImageNet ResNets (v1.5) and the CIFAR ResNets of section 4.2.

The pieces other zoo models share with it (``conv``, ``batch_norm``,
``padded``, the stage plans) are in :mod:`s4tf.models.blocks`; ``padded`` and
``torch_padding`` are re-exported here, where they were first published.
"""

from __future__ import annotations

import typing

from .. import layers
from ..activations import relu
from ..differentiable import no_derivative
from ..layers import Layer
from ..layers.layer import check_input_shape
from .blocks import batch_norm, build_blocks, conv, padded, stage_plan, torch_padding

__all__ = ["BasicBlock", "Bottleneck", "Projection", "ResNet", "padded", "torch_padding"]


class Projection(Layer):
    """The shortcut that changes shape: a strided 1x1 convolution and BatchNorm (option B).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.models.resnet.Projection(16, 32, strides=2)(s4tf.ones([1, 8, 8, 16])).shape
    (1, 4, 4, 32)
    """

    conv: layers.Conv2D
    bn: layers.BatchNorm

    def __init__(self, channels_in: int, channels_out: int, strides: int = 1):
        self.conv = conv(1, channels_in, channels_out, strides)
        self.bn = batch_norm(channels_out)

    def __call__(self, x):
        return self.bn(self.conv(x))


class BasicBlock(Layer):
    """Two 3x3 convolutions with BatchNorm and a shortcut (ResNet-18/34 and CIFAR ResNets).

    ``relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x))``; the shortcut is
    the identity, or a :class:`Projection` when the stride or width changes.

    Examples
    --------
    >>> import s4tf
    >>> block = s4tf.models.resnet.BasicBlock(8, 16, strides=2)
    >>> block(s4tf.ones([1, 8, 8, 8])).shape, s4tf.parameter_count(block)
    ((1, 4, 4, 16), 3680)
    """

    conv1: layers.Conv2D
    bn1: layers.BatchNorm
    conv2: layers.Conv2D
    bn2: layers.BatchNorm
    downsample: Projection | None
    expansion: typing.ClassVar[int] = 1

    def __init__(self, channels_in: int, width: int, strides: int = 1):
        self.conv1 = conv(3, channels_in, width, strides)
        self.bn1 = batch_norm(width)
        self.conv2 = conv(3, width, width)
        self.bn2 = batch_norm(width)
        needs_projection = strides != 1 or channels_in != width
        self.downsample = Projection(channels_in, width, strides) if needs_projection else None

    def __call__(self, x):
        y = relu(self.bn1(padded(self.conv1, x)))
        y = self.bn2(padded(self.conv2, y))
        return relu(y + (x if self.downsample is None else self.downsample(x)))


class Bottleneck(Layer):
    """1x1 reduce, 3x3 (strided: ResNet v1.5), 1x1 expand by 4, each with BatchNorm, plus a shortcut.

    Examples
    --------
    >>> import s4tf
    >>> block = s4tf.models.resnet.Bottleneck(16, 4, strides=2)
    >>> block(s4tf.ones([1, 8, 8, 16])).shape
    (1, 4, 4, 16)
    """

    conv1: layers.Conv2D
    bn1: layers.BatchNorm
    conv2: layers.Conv2D
    bn2: layers.BatchNorm
    conv3: layers.Conv2D
    bn3: layers.BatchNorm
    downsample: Projection | None
    expansion: typing.ClassVar[int] = 4

    def __init__(self, channels_in: int, width: int, strides: int = 1):
        channels_out = width * self.expansion
        self.conv1 = conv(1, channels_in, width)
        self.bn1 = batch_norm(width)
        self.conv2 = conv(3, width, width, strides)
        self.bn2 = batch_norm(width)
        self.conv3 = conv(1, width, channels_out)
        self.bn3 = batch_norm(channels_out)
        needs_projection = strides != 1 or channels_in != channels_out
        self.downsample = Projection(channels_in, channels_out, strides) if needs_projection else None

    def __call__(self, x):
        y = relu(self.bn1(self.conv1(x)))
        y = relu(self.bn2(padded(self.conv2, y)))
        y = self.bn3(self.conv3(y))
        return relu(y + (x if self.downsample is None else self.downsample(x)))


BLOCKS = {"basic": BasicBlock, "bottleneck": Bottleneck}


class ResNet(Layer):
    """Residual networks (He et al., CVPR 2016) for ImageNet and CIFAR, NHWC.

    ``stem="imagenet"`` is torchvision's ``resnet18/34/50/101/152`` (v1.5:
    the bottleneck's stride is on its 3x3 convolution): a 7x7/2 convolution,
    BatchNorm, ReLU and a 3x3/2 max pool, four stages of basic (18, 34) or
    bottleneck (50+) blocks of widths 64-512, global average pooling and a
    dense classifier. ``stem="cifar"`` is section 4.2 of the paper: a 3x3
    convolution to 16 channels and three stages of ``n`` basic blocks of
    widths 16/32/64 (depth ``6n + 2``), with 1x1 convolution + BatchNorm
    projection shortcuts where the shape changes (option B). Convolutions have
    no bias; BatchNorm uses torchvision's epsilon 1e-5 and momentum 0.9, and
    windows are padded as PyTorch pads them, so
    :func:`s4tf.models.load_torchvision` gives torchvision's outputs.

    Parameter counts (``s4tf.parameter_count``), equal to torchvision's at
    ``classes=1000``: ResNet-18 11,689,512; 34: 21,797,672; 50: 25,557,032;
    101: 44,549,160; 152: 60,192,808. CIFAR at ``classes=10``: ResNet-20
    272,474; 56: 855,770; 110: 1,730,714.

    Parameters
    ----------
    depth : int, default 50
        18, 34, 50, 101 or 152 with ``stem="imagenet"``; ``6n + 2`` (20, 32,
        44, 56, 110, ...) with ``stem="cifar"``.
    classes : int, default 1000
    stem : {"imagenet", "cifar"}
    width : int, optional
        Channels of the first stage (64 for ImageNet, 16 for CIFAR); smaller
        values make small models for tests.
    channels : int, default 3
        Input channels.

    Notes
    -----
    Fields: ``conv1``, ``bn1``, ``maxpool`` (None for CIFAR), ``blocks`` (a
    list of :class:`BasicBlock` or :class:`Bottleneck`, stage after stage),
    ``pool`` and ``fc``; ``stem`` and ``stage_sizes`` (blocks per stage).

    Examples
    --------
    >>> import s4tf
    >>> model = s4tf.models.ResNet(depth=20, classes=10, stem="cifar")
    >>> s4tf.parameter_count(model)
    272474
    >>> model(s4tf.zeros([2, 32, 32, 3])).shape
    (2, 10)
    >>> s4tf.models.ResNet(depth=18, width=8, classes=5)(s4tf.zeros([1, 32, 32, 3])).shape
    (1, 5)
    """

    conv1: layers.Conv2D
    bn1: layers.BatchNorm
    maxpool: layers.MaxPool2D | None
    blocks: list[BasicBlock | Bottleneck]
    pool: layers.GlobalAvgPool2D
    fc: layers.Dense
    stem: str = no_derivative()
    stage_sizes: tuple = no_derivative()

    def __init__(self, depth: int = 50, classes: int = 1000, stem: str = "imagenet",
                 width: int | None = None, channels: int = 3):
        kind, plan = stage_plan("ResNet", depth, stem)
        imagenet = stem == "imagenet"
        width = (64 if imagenet else 16) if width is None else width
        self.conv1 = conv(7, channels, width, strides=2) if imagenet else conv(3, channels, width)
        self.bn1 = batch_norm(width)
        self.maxpool = layers.MaxPool2D(pool_size=3, strides=2) if imagenet else None
        self.blocks, features = build_blocks(BLOCKS[kind], plan, width, width)
        self.pool = layers.GlobalAvgPool2D()
        self.fc = layers.Dense(features, classes)
        self.stem = stem
        self.stage_sizes = plan

    def __call__(self, x):
        check_input_shape(self, x, (None, None, None, self.conv1.filter.shape[2]),
                          "ResNet takes NHWC images (batch, height, width, channels).")
        x = relu(self.bn1(padded(self.conv1, x)))
        if self.maxpool is not None:
            x = padded(self.maxpool, x)
        for block in self.blocks:
            x = block(x)
        return self.fc(self.pool(x))
