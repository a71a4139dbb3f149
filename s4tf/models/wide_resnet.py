"""Wide residual networks (Zagoruyko and Komodakis, BMVC 2016)."""

from __future__ import annotations

from .. import layers
from ..activations import relu
from ..differentiable import no_derivative
from ..layers import Layer
from ..layers.layer import check_input_shape
from .blocks import batch_norm, build_blocks, conv, padded
from .resnet_v2 import PreActBasicBlock

__all__ = ["WideResNet"]


class WideResNet(Layer):
    """WRN-``depth``-``width``: a pre-activation CIFAR ResNet with stages ``width`` times wider.

    A 3x3 convolution to 16 channels, three stages of ``(depth - 4) / 6``
    :class:`~s4tf.models.resnet_v2.PreActBasicBlock` blocks of widths
    ``16 * width``, ``32 * width`` and ``64 * width`` (strides 1, 2, 2), a
    final BatchNorm and ReLU, global average pooling and the classifier. A
    bias-free 1x1 convolution of the pre-activated input is the shortcut
    wherever the shape changes (the first block of every stage when
    ``width > 1``). ``dropout`` sits between each block's convolutions, as in
    the paper's WRN-28-10 with dropout 0.3. This is the authors' layout
    (and the common PyTorch port's), without convolution biases.

    Parameter counts at ``classes=10``: WRN-28-10 36,479,194; WRN-16-8
    10,961,370; WRN-40-2 2,243,546.

    Parameters
    ----------
    depth : int, default 28
        ``6n + 4``: 10, 16, 22, 28, 40, ...
    width : int, default 10
        The widening factor ``k``.
    classes : int, default 10
    dropout : float, default 0.0
    channels : int, default 3
        Input channels.

    Notes
    -----
    Fields: ``conv1``, ``blocks``, ``bn``, ``pool``, ``fc``; ``depth`` and
    ``width``.

    Examples
    --------
    >>> import s4tf
    >>> model = s4tf.models.WideResNet(depth=16, width=1)
    >>> s4tf.parameter_count(model)
    175066
    >>> model(s4tf.zeros([2, 32, 32, 3])).shape
    (2, 10)
    """

    conv1: layers.Conv2D
    blocks: list[PreActBasicBlock]
    bn: layers.BatchNorm
    pool: layers.GlobalAvgPool2D
    fc: layers.Dense
    depth: int = no_derivative()
    width: int = no_derivative()

    def __init__(self, depth: int = 28, width: int = 10, classes: int = 10,
                 dropout: float = 0.0, channels: int = 3):
        if not isinstance(depth, int) or depth < 10 or (depth - 4) % 6:
            raise ValueError(f"WideResNet: depth={depth!r} is not a wide ResNet depth; valid "
                             "depths are 6n+4 for n >= 1: 10, 16, 22, 28, 40, ...")
        if not isinstance(width, int) or width < 1:
            raise ValueError(f"WideResNet: width (the widening factor k) must be an int >= 1; "
                             f"received width={width!r}.")
        self.conv1 = conv(3, channels, 16)
        self.blocks, features = build_blocks(PreActBasicBlock, ((depth - 4) // 6,) * 3, 16,
                                             16 * width, dropout=dropout)
        self.bn = batch_norm(features)
        self.pool = layers.GlobalAvgPool2D()
        self.fc = layers.Dense(features, classes)
        self.depth = depth
        self.width = width

    def __call__(self, x):
        check_input_shape(self, x, (None, None, None, self.conv1.filter.shape[2]),
                          "WideResNet takes NHWC images (batch, height, width, channels).")
        x = padded(self.conv1, x)
        for block in self.blocks:
            x = block(x)
        return self.fc(self.pool(relu(self.bn(x))))
