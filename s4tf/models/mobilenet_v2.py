"""MobileNetV2 (Sandler et al. 2018), as torchvision's ``mobilenet_v2``."""

from __future__ import annotations

from .. import layers
from ..activations import relu6
from ..differentiable import no_derivative
from ..layers import Layer
from ._divisible import make_divisible
from ._settings import check_settings

__all__ = ["MobileNetV2"]

# (expansion t, output channels c, repeats n, first stride s): the paper's Table 2.
_SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
             (6, 160, 3, 2), (6, 320, 1, 1))


class InvertedResidual(Layer):
    """MobileNetV2's block: 1x1 expansion, 3x3 depthwise, linear 1x1 projection.

    ``expand`` (absent when the expansion ratio is 1) and ``depthwise`` end in
    ReLU6; ``project`` has no activation (the "linear bottleneck"). The input
    is added back when the stride is 1 and the channel count is unchanged.
    Torchvision's ``conv`` Sequential holds the same layers in this order
    (``project`` is its last ``Conv2d`` and ``BatchNorm2d``).

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.models.mobilenet_v2 import InvertedResidual
    >>> block = InvertedResidual(input_channels=8, output_channels=8, strides=1, expansion=6)
    >>> block(s4tf.ones([1, 8, 8, 8])).shape
    (1, 8, 8, 8)
    """

    expand: layers.Conv2DNormActivation | None
    depthwise: layers.Conv2DNormActivation
    project: layers.Conv2DNormActivation
    residual: bool = no_derivative()

    def __init__(self, input_channels: int, output_channels: int, strides: int, expansion: int):
        hidden = int(round(input_channels * expansion))
        self.expand = (None if expansion == 1 else
                       layers.Conv2DNormActivation(input_channels, hidden, kernel_size=1,
                                                   activation=relu6))
        self.depthwise = layers.Conv2DNormActivation(hidden, hidden, strides=strides,
                                                     depthwise=True, activation=relu6)
        self.project = layers.Conv2DNormActivation(hidden, output_channels, kernel_size=1,
                                                   activation=None)
        self.residual = strides == 1 and input_channels == output_channels

    def __call__(self, x):
        out = x if self.expand is None else self.expand(x)
        out = self.project(self.depthwise(out))
        return x + out if self.residual else out


class MobileNetV2(Layer):
    """MobileNetV2 with inverted residual blocks and linear bottlenecks.

    Matches torchvision's ``mobilenet_v2`` layer for layer: a 3x3 stride-2
    stem, 17 :class:`InvertedResidual` blocks, a 1x1 head to 1280 channels,
    global average pooling, dropout and a dense classifier. Channel counts are
    scaled by ``width_multiplier`` and rounded to multiples of 8 as
    torchvision rounds them (the head is never narrowed below 1280).
    BatchNorm uses torchvision's epsilon 1e-5 and momentum (0.9 here).

    Torchvision's ``features[0]`` is ``stem``, ``features[1:18]`` are
    ``blocks``, ``features[18]`` is ``head`` and ``classifier[1]`` is
    ``classifier``.

    Parameters
    ----------
    width_multiplier : float, default 1.0
    classes : int, default 1000
    dropout : float, default 0.2
        Dropout probability before the classifier.
    block_settings : sequence of (expansion, channels, repeats, stride), optional
        The block table (torchvision's ``inverted_residual_setting``); the
        default is the paper's Table 2. Channels are scaled by
        ``width_multiplier``.

    Notes
    -----
    Parameter count: 3,504,872 at ``width_multiplier=1.0, classes=1000``
    (torchvision's).

    References
    ----------
    Sandler et al., "MobileNetV2: Inverted Residuals and Linear Bottlenecks",
    CVPR 2018; ``torchvision.models.mobilenet_v2``.

    Examples
    --------
    >>> import s4tf
    >>> model = s4tf.models.MobileNetV2(width_multiplier=0.25, classes=10)
    >>> model(s4tf.zeros([1, 32, 32, 3])).shape
    (1, 10)
    """

    stem: layers.Conv2DNormActivation
    blocks: list[InvertedResidual]
    head: layers.Conv2DNormActivation
    pool: layers.GlobalAvgPool2D
    dropout: layers.Dropout
    classifier: layers.Dense

    def __init__(self, width_multiplier: float = 1.0, classes: int = 1000,
                 dropout: float = 0.2, block_settings=_SETTINGS):
        if not width_multiplier > 0:
            raise ValueError(f"MobileNetV2: width_multiplier must be positive, got "
                             f"{width_multiplier!r}.")
        block_settings = check_settings("MobileNetV2", "block_settings", block_settings,
                                        "(expansion, channels, repeats, stride)")
        channels = make_divisible(32 * width_multiplier)
        last = make_divisible(1280 * max(1.0, width_multiplier))
        self.stem = layers.Conv2DNormActivation(3, channels, strides=2, activation=relu6)
        self.blocks = []
        for expansion, width, repeats, stride in block_settings:
            out = make_divisible(width * width_multiplier)
            for i in range(repeats):
                self.blocks.append(InvertedResidual(channels, out, stride if i == 0 else 1,
                                                    expansion))
                channels = out
        self.head = layers.Conv2DNormActivation(channels, last, kernel_size=1, activation=relu6)
        self.pool = layers.GlobalAvgPool2D()
        self.dropout = layers.Dropout(dropout)
        self.classifier = layers.Dense(last, classes)

    def __call__(self, x):
        x = self.stem(x)
        for block in self.blocks:
            x = block(x)
        return x.sequenced(self.head, self.pool, self.dropout, self.classifier)
