"""EfficientNet B0-B7 (Tan and Le 2019), as torchvision's ``efficientnet_b*``."""

from __future__ import annotations

import math

from .. import layers
from ..activations import swish
from ..differentiable import no_derivative
from ..layers import Layer
from ._divisible import make_divisible
from ._settings import check_settings

__all__ = ["EfficientNet"]

# (expansion, kernel, first stride, input, output, repeats) of B0's seven stages.
_STAGES = ((1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2),
           (6, 3, 2, 40, 80, 3), (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4),
           (6, 3, 1, 192, 320, 1))
# kind: (width multiplier, depth multiplier, dropout, BatchNorm epsilon, momentum), as
# torchvision's constructors (B5-B7 use TF's BatchNorm; torch momentum 0.01 is 0.99 here).
_KINDS = {
    "b0": (1.0, 1.0, 0.2, 1e-5, 0.9), "b1": (1.0, 1.1, 0.2, 1e-5, 0.9),
    "b2": (1.1, 1.2, 0.3, 1e-5, 0.9), "b3": (1.2, 1.4, 0.3, 1e-5, 0.9),
    "b4": (1.4, 1.8, 0.4, 1e-5, 0.9), "b5": (1.6, 2.2, 0.4, 1e-3, 0.99),
    "b6": (1.8, 2.6, 0.5, 1e-3, 0.99), "b7": (2.0, 3.1, 0.5, 1e-3, 0.99),
}


class MBConv(Layer):
    """EfficientNet's mobile inverted bottleneck with squeeze-excitation and stochastic depth.

    1x1 expansion (absent at expansion 1), depthwise convolution, a
    squeeze-excitation squeezing to ``max(1, input_channels // 4)`` with SiLU
    (swish) and a sigmoid gate, then a linear 1x1 projection. When the input
    is added back (stride 1, same width) the branch first passes
    ``stochastic_depth``. Torchvision's ``block`` Sequential holds ``expand``,
    ``depthwise``, ``se`` and ``project`` in this order.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.models.efficientnet import MBConv
    >>> block = MBConv(8, 8, expansion=6, kernel_size=3, strides=1, drop_probability=0.1)
    >>> block(s4tf.ones([2, 8, 8, 8])).shape
    (2, 8, 8, 8)
    """

    expand: layers.Conv2DNormActivation | None
    depthwise: layers.Conv2DNormActivation
    se: layers.SqueezeExcitation
    project: layers.Conv2DNormActivation
    stochastic_depth: layers.StochasticDepth
    residual: bool = no_derivative()

    def __init__(self, input_channels: int, output_channels: int, expansion: int,
                 kernel_size: int, strides: int, drop_probability: float,
                 momentum: float = 0.9, epsilon: float = 1e-5):
        bn = {"momentum": momentum, "epsilon": epsilon}
        expanded = make_divisible(input_channels * expansion)
        self.expand = (None if expanded == input_channels else
                       layers.Conv2DNormActivation(input_channels, expanded, kernel_size=1,
                                                   activation=swish, **bn))
        self.depthwise = layers.Conv2DNormActivation(expanded, expanded, kernel_size=kernel_size,
                                                     strides=strides, depthwise=True,
                                                     activation=swish, **bn)
        self.se = layers.SqueezeExcitation(expanded, max(1, input_channels // 4),
                                           activation=swish)
        self.project = layers.Conv2DNormActivation(expanded, output_channels, kernel_size=1,
                                                   activation=None, **bn)
        self.stochastic_depth = layers.StochasticDepth(drop_probability, mode="row")
        self.residual = strides == 1 and input_channels == output_channels

    def __call__(self, x):
        out = x if self.expand is None else self.expand(x)
        out = self.project(self.se(self.depthwise(out)))
        return x + self.stochastic_depth(out) if self.residual else out


class EfficientNet(Layer):
    """EfficientNet-B0 to B7: MBConv stages scaled in width and depth.

    Matches torchvision's ``efficientnet_b0`` ... ``efficientnet_b7`` layer for
    layer: a 3x3 stride-2 SiLU stem, seven stages of :class:`MBConv` blocks
    (B0's widths times the kind's width multiplier, rounded to multiples of 8;
    B0's repeats times its depth multiplier, rounded up), a 1x1 head to four
    times the last width, global average pooling, dropout and a dense
    classifier. Stochastic depth drops residual branches with a probability
    rising linearly from 0 over the blocks (block ``i`` of ``n``:
    ``stochastic_depth * i / n``), as torchvision's. Inputs are NHWC images of
    any size >= 32x32 (torchvision trains B0 at 224, B7 at 600).

    Torchvision's ``features[0]`` is ``stem``, ``features[1:8]`` are
    ``stages``, ``features[8]`` is ``head`` and ``classifier[1]`` is
    ``classifier``.

    Parameters
    ----------
    kind : str, default "b0"
        ``"b0"`` ... ``"b7"``; sets width, depth, dropout and BatchNorm
        epsilon/momentum as torchvision does.
    classes : int, default 1000
    stochastic_depth : float, default 0.2
        Drop probability reached by the last block.
    dropout : float or None
        Dropout before the classifier; ``None`` takes the kind's (0.2 for B0
        up to 0.5 for B7).
    stage_settings : sequence of tuples, optional
        One ``(expansion, kernel, stride, input, output, repeats)`` tuple per
        stage, at B0's scale (torchvision's ``inverted_residual_setting``
        before scaling); the default is B0's seven stages.

    Notes
    -----
    Parameter counts at ``classes=1000`` (torchvision's): B0 5,288,548;
    B1 7,794,184; B2 9,109,994; B3 12,233,232; B4 19,341,616; B5 30,389,784;
    B6 43,040,704; B7 66,347,960.

    References
    ----------
    Tan and Le, "EfficientNet: Rethinking Model Scaling for Convolutional
    Neural Networks", ICML 2019; ``torchvision.models.efficientnet_b0``.

    Examples
    --------
    >>> import s4tf
    >>> model = s4tf.models.EfficientNet(kind="b0", classes=10)
    >>> model(s4tf.zeros([1, 32, 32, 3])).shape
    (1, 10)
    """

    stem: layers.Conv2DNormActivation
    stages: list[list[MBConv]]
    head: layers.Conv2DNormActivation
    pool: layers.GlobalAvgPool2D
    dropout: layers.Dropout
    classifier: layers.Dense
    kind: str = no_derivative()

    def __init__(self, kind: str = "b0", classes: int = 1000, stochastic_depth: float = 0.2,
                 dropout: float | None = None, stage_settings=_STAGES):
        if kind not in _KINDS:
            raise ValueError(f"EfficientNet: kind must be one of {', '.join(_KINDS)}, got "
                             f"{kind!r}.")
        stage_settings = check_settings("EfficientNet", "stage_settings", stage_settings,
                                        "(expansion, kernel, stride, input, output, repeats)")
        width, depth, default_dropout, epsilon, momentum = _KINDS[kind]
        bn = {"momentum": momentum, "epsilon": epsilon}
        stages = [(expansion, kernel, stride, make_divisible(inp * width),
                   make_divisible(out * width), math.ceil(repeats * depth))
                  for expansion, kernel, stride, inp, out, repeats in stage_settings]
        total = sum(stage[-1] for stage in stages)
        self.kind = kind
        self.stem = layers.Conv2DNormActivation(3, stages[0][3], strides=2, activation=swish,
                                                **bn)
        self.stages, index = [], 0
        for expansion, kernel, stride, inp, out, repeats in stages:
            blocks = []
            for i in range(repeats):
                blocks.append(MBConv(inp if i == 0 else out, out, expansion, kernel,
                                     stride if i == 0 else 1, stochastic_depth * index / total,
                                     **bn))
                index += 1
            self.stages.append(blocks)
        last = stages[-1][4]
        self.head = layers.Conv2DNormActivation(last, 4 * last, kernel_size=1, activation=swish,
                                                **bn)
        self.pool = layers.GlobalAvgPool2D()
        self.dropout = layers.Dropout(default_dropout if dropout is None else dropout)
        self.classifier = layers.Dense(4 * last, classes)

    def __call__(self, x):
        x = self.stem(x)
        for stage in self.stages:
            for block in stage:
                x = block(x)
        return x.sequenced(self.head, self.pool, self.dropout, self.classifier)
