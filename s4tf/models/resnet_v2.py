"""Pre-activation ResNet (He et al., "Identity Mappings in Deep Residual Networks", ECCV 2016)."""

from __future__ import annotations

import typing

from .. import layers
from ..activations import relu
from ..differentiable import no_derivative
from ..layers import Layer
from ..layers.layer import check_input_shape
from .blocks import batch_norm, build_blocks, conv, padded, stage_plan

__all__ = ["PreActBasicBlock", "PreActBottleneck", "ResNetV2"]


class PreActBasicBlock(Layer):
    """BN-ReLU-conv3x3, twice, added to the shortcut (He et al. 2016b, Figure 1b).

    ``y = relu(bn1(x))``; the output is ``conv2(relu(bn2(conv1(y)))) +
    shortcut``, where the shortcut is ``x`` itself, or a bias-free strided 1x1
    convolution of ``y`` when the stride or width changes. With
    ``dropout > 0`` a dropout layer sits between the convolutions (wide
    ResNets).

    Examples
    --------
    >>> import s4tf
    >>> block = s4tf.models.resnet_v2.PreActBasicBlock(8, 16, strides=2)
    >>> block(s4tf.ones([1, 8, 8, 8])).shape, s4tf.parameter_count(block)
    ((1, 4, 4, 16), 3632)
    """

    bn1: layers.BatchNorm
    conv1: layers.Conv2D
    bn2: layers.BatchNorm
    dropout: layers.Dropout | None
    conv2: layers.Conv2D
    shortcut: layers.Conv2D | None
    expansion: typing.ClassVar[int] = 1

    def __init__(self, channels_in: int, width: int, strides: int = 1, dropout: float = 0.0):
        self.bn1 = batch_norm(channels_in)
        self.conv1 = conv(3, channels_in, width, strides)
        self.bn2 = batch_norm(width)
        self.dropout = layers.Dropout(probability=dropout) if dropout > 0 else None
        self.conv2 = conv(3, width, width)
        needs_projection = strides != 1 or channels_in != width
        self.shortcut = conv(1, channels_in, width, strides) if needs_projection else None

    def __call__(self, x):
        y = relu(self.bn1(x))
        residual = relu(self.bn2(padded(self.conv1, y)))
        if self.dropout is not None:
            residual = self.dropout(residual)
        residual = padded(self.conv2, residual)
        return residual + (x if self.shortcut is None else self.shortcut(y))


class PreActBottleneck(Layer):
    """BN-ReLU before each of 1x1 reduce, 3x3 (strided), 1x1 expand by 4; plus the shortcut.

    The shortcut is ``x``, or a strided 1x1 convolution of ``relu(bn1(x))``
    when the shape changes.

    Examples
    --------
    >>> import s4tf
    >>> block = s4tf.models.resnet_v2.PreActBottleneck(16, 4, strides=2)
    >>> block(s4tf.ones([1, 8, 8, 16])).shape
    (1, 4, 4, 16)
    """

    bn1: layers.BatchNorm
    conv1: layers.Conv2D
    bn2: layers.BatchNorm
    conv2: layers.Conv2D
    bn3: layers.BatchNorm
    conv3: layers.Conv2D
    shortcut: layers.Conv2D | None
    expansion: typing.ClassVar[int] = 4

    def __init__(self, channels_in: int, width: int, strides: int = 1):
        channels_out = width * self.expansion
        self.bn1 = batch_norm(channels_in)
        self.conv1 = conv(1, channels_in, width)
        self.bn2 = batch_norm(width)
        self.conv2 = conv(3, width, width, strides)
        self.bn3 = batch_norm(width)
        self.conv3 = conv(1, width, channels_out)
        needs_projection = strides != 1 or channels_in != channels_out
        self.shortcut = conv(1, channels_in, channels_out, strides) if needs_projection else None

    def __call__(self, x):
        y = relu(self.bn1(x))
        residual = self.conv1(y)
        residual = padded(self.conv2, relu(self.bn2(residual)))
        residual = self.conv3(relu(self.bn3(residual)))
        return residual + (x if self.shortcut is None else self.shortcut(y))


BLOCKS = {"basic": PreActBasicBlock, "bottleneck": PreActBottleneck}


class ResNetV2(Layer):
    """Pre-activation residual networks (He et al., ECCV 2016), NHWC.

    The depths and stems of :class:`~s4tf.models.ResNet` (ImageNet 18, 34,
    50, 101, 152; CIFAR ``6n + 2``), with every block pre-activated
    (BatchNorm and ReLU before each convolution, nothing after the addition,
    so the shortcut path is an identity from block to block) and projection
    shortcuts that are plain 1x1 convolutions of the pre-activated input. The
    stem is the first convolution alone (ImageNet: 7x7/2 and a 3x3/2 max
    pool); a final BatchNorm and ReLU come before global average pooling and
    the classifier. Strides sit on the 3x3 convolutions (as in fb.resnet.torch
    and torchvision's v1.5). No convolution has a bias.

    Parameter counts (``s4tf.parameter_count``): CIFAR at ``classes=10``:
    ResNetV2-20 272,282; 56: 855,578; 110: 1,730,522. ImageNet at
    ``classes=1000``: 18: 11,687,720; 34: 21,795,880; 50: 25,549,352;
    101: 44,541,480; 152: 60,185,128. (No reference implementation of these
    configurations publishes counts; the tests derive them by hand.)

    Parameters
    ----------
    depth : int, default 50
    classes : int, default 1000
    stem : {"imagenet", "cifar"}
    width : int, optional
        Channels of the first stage (64 for ImageNet, 16 for CIFAR).
    channels : int, default 3
        Input channels.

    Notes
    -----
    Fields: ``conv1``, ``maxpool`` (None for CIFAR), ``blocks``, ``bn``
    (the final BatchNorm), ``pool``, ``fc``; ``stem``, ``stage_sizes``.

    Examples
    --------
    >>> import s4tf
    >>> model = s4tf.models.ResNetV2(depth=20, classes=10, stem="cifar")
    >>> s4tf.parameter_count(model)
    272282
    >>> model(s4tf.zeros([2, 32, 32, 3])).shape
    (2, 10)
    """

    conv1: layers.Conv2D
    maxpool: layers.MaxPool2D | None
    blocks: list[PreActBasicBlock | PreActBottleneck]
    bn: layers.BatchNorm
    pool: layers.GlobalAvgPool2D
    fc: layers.Dense
    stem: str = no_derivative()
    stage_sizes: tuple = no_derivative()

    def __init__(self, depth: int = 50, classes: int = 1000, stem: str = "imagenet",
                 width: int | None = None, channels: int = 3):
        kind, plan = stage_plan("ResNetV2", depth, stem)
        imagenet = stem == "imagenet"
        width = (64 if imagenet else 16) if width is None else width
        self.conv1 = conv(7, channels, width, strides=2) if imagenet else conv(3, channels, width)
        # Before any normalization values can be negative: "same" max pooling pads with -inf.
        self.maxpool = (layers.MaxPool2D(pool_size=3, strides=2, padding="same")
                        if imagenet else None)
        self.blocks, features = build_blocks(BLOCKS[kind], plan, width, width)
        self.bn = batch_norm(features)
        self.pool = layers.GlobalAvgPool2D()
        self.fc = layers.Dense(features, classes)
        self.stem = stem
        self.stage_sizes = plan

    def __call__(self, x):
        check_input_shape(self, x, (None, None, None, self.conv1.filter.shape[2]),
                          "ResNetV2 takes NHWC images (batch, height, width, channels).")
        x = padded(self.conv1, x)
        if self.maxpool is not None:
            x = self.maxpool(x)
        for block in self.blocks:
            x = block(x)
        return self.fc(self.pool(relu(self.bn(x))))
