"""MobileNetV3 Large and Small (Howard et al. 2019), as torchvision's ``mobilenet_v3_*``."""

from __future__ import annotations

import typing

from .. import layers
from ..activations import hard_sigmoid, hard_swish, relu
from ..differentiable import no_derivative
from ..layers import Layer
from ._divisible import make_divisible
from ._settings import check_settings

__all__ = ["MobileNetV3"]

# BatchNorm as torchvision's MobileNetV3 (torch momentum 0.01 is 0.99 here).
_BN = {"momentum": 0.99, "epsilon": 1e-3}

# (input, kernel, expanded, output, squeeze-excitation, hard-swish, stride): the
# paper's Tables 1 and 2, as torchvision's ``_mobilenet_v3_conf`` lists them.
_LARGE = (
    (16, 3, 16, 16, False, False, 1), (16, 3, 64, 24, False, False, 2),
    (24, 3, 72, 24, False, False, 1), (24, 5, 72, 40, True, False, 2),
    (40, 5, 120, 40, True, False, 1), (40, 5, 120, 40, True, False, 1),
    (40, 3, 240, 80, False, True, 2), (80, 3, 200, 80, False, True, 1),
    (80, 3, 184, 80, False, True, 1), (80, 3, 184, 80, False, True, 1),
    (80, 3, 480, 112, True, True, 1), (112, 3, 672, 112, True, True, 1),
    (112, 5, 672, 160, True, True, 2), (160, 5, 960, 160, True, True, 1),
    (160, 5, 960, 160, True, True, 1),
)
_SMALL = (
    (16, 3, 16, 16, True, False, 2), (16, 3, 72, 24, False, False, 2),
    (24, 3, 88, 24, False, False, 1), (24, 5, 96, 40, True, True, 2),
    (40, 5, 240, 40, True, True, 1), (40, 5, 240, 40, True, True, 1),
    (40, 5, 120, 48, True, True, 1), (48, 5, 144, 48, True, True, 1),
    (48, 5, 288, 96, True, True, 2), (96, 5, 576, 96, True, True, 1),
    (96, 5, 576, 96, True, True, 1),
)
# Blocks and the width of the classifier's hidden layer, per size.
_SIZES = {"large": (_LARGE, 1280), "small": (_SMALL, 1024)}


class InvertedResidual(Layer):
    """MobileNetV3's block: expansion, depthwise, optional squeeze-excitation, projection.

    ``expand`` is absent when the expanded width equals the input width; the
    squeeze-excitation ``se`` squeezes to ``make_divisible(expanded // 4, 8)``
    channels with ReLU and a hard-sigmoid gate. Torchvision's ``block``
    Sequential holds the same layers in this order.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.models.mobilenet_v3 import InvertedResidual
    >>> block = InvertedResidual(8, 16, 8, kernel_size=3, strides=2, use_se=True,
    ...                          activation=s4tf.hard_swish)
    >>> block(s4tf.ones([1, 8, 8, 8])).shape
    (1, 4, 4, 8)
    """

    expand: layers.Conv2DNormActivation | None
    depthwise: layers.Conv2DNormActivation
    se: layers.SqueezeExcitation | None
    project: layers.Conv2DNormActivation
    residual: bool = no_derivative()

    def __init__(self, input_channels: int, expanded_channels: int, output_channels: int,
                 kernel_size: int, strides: int, use_se: bool, activation: typing.Callable):
        self.expand = (None if expanded_channels == input_channels else
                       layers.Conv2DNormActivation(input_channels, expanded_channels,
                                                   kernel_size=1, activation=activation, **_BN))
        self.depthwise = layers.Conv2DNormActivation(
            expanded_channels, expanded_channels, kernel_size=kernel_size, strides=strides,
            depthwise=True, activation=activation, **_BN)
        self.se = (layers.SqueezeExcitation(expanded_channels,
                                            make_divisible(expanded_channels // 4, 8),
                                            activation=relu, gate=hard_sigmoid)
                   if use_se else None)
        self.project = layers.Conv2DNormActivation(expanded_channels, output_channels,
                                                   kernel_size=1, activation=None, **_BN)
        self.residual = strides == 1 and input_channels == output_channels

    def __call__(self, x):
        out = x if self.expand is None else self.expand(x)
        out = self.depthwise(out)
        if self.se is not None:
            out = self.se(out)
        out = self.project(out)
        return x + out if self.residual else out


class MobileNetV3(Layer):
    """MobileNetV3-Large or -Small, with hard-swish and squeeze-excitation.

    Matches torchvision's ``mobilenet_v3_large`` / ``mobilenet_v3_small``
    layer for layer: a 3x3 stride-2 hard-swish stem, the
    :class:`InvertedResidual` blocks of the paper's Table 1 (large) or 2
    (small), a 1x1 head to six times the last block's width, global average
    pooling, then ``fc1`` (to 1280 or 1024, hard-swish), dropout and ``fc2``.
    Channel counts (the hidden classifier width included) are scaled by
    ``width_multiplier`` and rounded to multiples of 8 as torchvision rounds
    them. BatchNorm uses torchvision's epsilon 1e-3 and momentum (0.99 here).

    Torchvision's ``features[0]`` is ``stem``, ``features[1:-1]`` are
    ``blocks``, ``features[-1]`` is ``head``, ``classifier[0]`` is ``fc1`` and
    ``classifier[3]`` is ``fc2``.

    Parameters
    ----------
    size : str, default "large"
        ``"large"`` or ``"small"``.
    width_multiplier : float, default 1.0
    classes : int, default 1000
    dropout : float, default 0.2
    block_settings : sequence of tuples, optional
        The block table, one ``(input, kernel, expanded, output, use_se,
        use_hard_swish, stride)`` tuple per block (torchvision's
        ``inverted_residual_setting``, channels before ``width_multiplier``);
        the default is the size's table from the paper.

    Notes
    -----
    Parameter counts at ``width_multiplier=1.0, classes=1000``: 5,483,032
    (large) and 2,542,856 (small), torchvision's.

    References
    ----------
    Howard et al., "Searching for MobileNetV3", ICCV 2019;
    ``torchvision.models.mobilenet_v3_large`` and ``mobilenet_v3_small``.

    Examples
    --------
    >>> import s4tf
    >>> model = s4tf.models.MobileNetV3(size="small", width_multiplier=0.25, classes=10)
    >>> model(s4tf.zeros([1, 32, 32, 3])).shape
    (1, 10)
    """

    stem: layers.Conv2DNormActivation
    blocks: list[InvertedResidual]
    head: layers.Conv2DNormActivation
    pool: layers.GlobalAvgPool2D
    fc1: layers.Dense
    dropout: layers.Dropout
    fc2: layers.Dense
    size: str = no_derivative()

    def __init__(self, size: str = "large", width_multiplier: float = 1.0, classes: int = 1000,
                 dropout: float = 0.2, block_settings=None):
        if size not in _SIZES:
            raise ValueError(f"MobileNetV3: size must be 'large' or 'small', got {size!r}.")
        if not width_multiplier > 0:
            raise ValueError(f"MobileNetV3: width_multiplier must be positive, got "
                             f"{width_multiplier!r}.")
        settings, hidden = _SIZES[size]
        if block_settings is not None:
            settings = check_settings(
                "MobileNetV3", "block_settings", block_settings,
                "(input, kernel, expanded, output, use_se, use_hard_swish, stride)")

        def scaled(channels):
            return make_divisible(channels * width_multiplier)

        self.size = size
        self.stem = layers.Conv2DNormActivation(3, scaled(settings[0][0]), strides=2,
                                                activation=hard_swish, **_BN)
        self.blocks = [
            InvertedResidual(scaled(inp), scaled(expanded), scaled(out), kernel, stride, use_se,
                             hard_swish if use_hs else relu)
            for inp, kernel, expanded, out, use_se, use_hs, stride in settings
        ]
        last = scaled(settings[-1][3])
        self.head = layers.Conv2DNormActivation(last, 6 * last, kernel_size=1,
                                                activation=hard_swish, **_BN)
        self.pool = layers.GlobalAvgPool2D()
        self.fc1 = layers.Dense(6 * last, scaled(hidden), activation=hard_swish)
        self.dropout = layers.Dropout(dropout)
        self.fc2 = layers.Dense(scaled(hidden), classes)

    def __call__(self, x):
        x = self.stem(x)
        for block in self.blocks:
            x = block(x)
        return x.sequenced(self.head, self.pool, self.fc1, self.dropout, self.fc2)
