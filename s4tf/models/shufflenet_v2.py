"""ShuffleNetV2 (Ma et al. 2018), as torchvision's ``shufflenet_v2_x*``."""

from __future__ import annotations

from .. import layers, nn
from ..activations import relu
from ..differentiable import no_derivative
from ..layers import Layer
from ..ops import concat, split

__all__ = ["ShuffleNetV2"]

# width: output channels of conv1, stages 2-4 and conv5 (the paper's Table 5).
_WIDTHS = {0.5: (24, 48, 96, 192, 1024), 1.0: (24, 116, 232, 464, 1024),
           1.5: (24, 176, 352, 704, 1024), 2.0: (24, 244, 488, 976, 2048)}
_REPEATS = (4, 8, 4)


class ShuffleUnit(Layer):
    """ShuffleNetV2's unit: two branches, concatenated, then a channel shuffle.

    With stride 1 the input's first half of channels passes unchanged and
    ``branch2`` (1x1, 3x3 depthwise without activation, 1x1) transforms the
    second half; with stride 2 ``branch1`` (3x3 depthwise, 1x1) and
    ``branch2`` both see the whole input. Torchvision's ``InvertedResidual``
    holds the same convolutions (its ``branch1`` is empty at stride 1, as here).

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.models.shufflenet_v2 import ShuffleUnit
    >>> ShuffleUnit(24, 48, strides=2)(s4tf.ones([1, 8, 8, 24])).shape
    (1, 4, 4, 48)
    >>> ShuffleUnit(48, 48, strides=1)(s4tf.ones([1, 4, 4, 48])).shape
    (1, 4, 4, 48)
    """

    branch1: list[layers.Conv2DNormActivation]
    branch2: list[layers.Conv2DNormActivation]
    shuffle: layers.ChannelShuffle
    strides: int = no_derivative()

    def __init__(self, input_channels: int, output_channels: int, strides: int):
        branch = output_channels // 2
        if strides == 1 and input_channels != 2 * branch:
            raise ValueError(
                f"ShuffleUnit: with strides=1 the input must have output_channels "
                f"({output_channels}, even) channels, got input_channels={input_channels}."
            )
        self.strides = strides
        self.branch1 = [] if strides == 1 else [
            layers.Conv2DNormActivation(input_channels, input_channels, strides=strides,
                                        depthwise=True, activation=None),
            layers.Conv2DNormActivation(input_channels, branch, kernel_size=1, activation=relu),
        ]
        self.branch2 = [
            layers.Conv2DNormActivation(input_channels if strides > 1 else branch, branch,
                                        kernel_size=1, activation=relu),
            layers.Conv2DNormActivation(branch, branch, strides=strides, depthwise=True,
                                        activation=None),
            layers.Conv2DNormActivation(branch, branch, kernel_size=1, activation=relu),
        ]
        self.shuffle = layers.ChannelShuffle(groups=2)

    def __call__(self, x):
        if self.strides == 1:
            kept, x = split(x, 2, axis=-1)
        else:
            kept = x
            for layer in self.branch1:
                kept = layer(kept)
        for layer in self.branch2:
            x = layer(x)
        return self.shuffle(concat([kept, x], axis=-1))


class ShuffleNetV2(Layer):
    """ShuffleNetV2 at widths 0.5, 1.0, 1.5 or 2.0.

    Matches torchvision's ``shufflenet_v2_x0_5`` ... ``x2_0`` layer for layer:
    ``conv1`` (3x3 stride 2, BatchNorm, ReLU), a 3x3 stride-2 max pool, three
    stages of 4, 8 and 4 :class:`ShuffleUnit` s (the first of each with stride
    2), ``conv5`` (1x1), global average pooling and the dense ``fc``.
    BatchNorm uses torchvision's epsilon 1e-5 and momentum (0.9 here).

    Torchvision's ``stage2``-``stage4`` are ``stages[0]``-``stages[2]``; the
    other names are torchvision's.

    Parameters
    ----------
    width : float, default 1.0
        0.5, 1.0, 1.5 or 2.0 (the paper's channel multipliers).
    classes : int, default 1000
    stage_repeats : sequence of 3 ints, default (4, 8, 4)
        Units per stage (torchvision's ``stages_repeats``).

    Notes
    -----
    Parameter counts at ``classes=1000`` (torchvision's): 1,366,792 (0.5),
    2,278,604 (1.0), 3,503,624 (1.5), 7,393,996 (2.0).

    References
    ----------
    Ma et al., "ShuffleNet V2: Practical Guidelines for Efficient CNN
    Architecture Design", ECCV 2018; ``torchvision.models.shufflenet_v2_x1_0``.

    Examples
    --------
    >>> import s4tf
    >>> model = s4tf.models.ShuffleNetV2(width=0.5, classes=10)
    >>> model(s4tf.zeros([1, 32, 32, 3])).shape
    (1, 10)
    """

    conv1: layers.Conv2DNormActivation
    stages: list[list[ShuffleUnit]]
    conv5: layers.Conv2DNormActivation
    pool: layers.GlobalAvgPool2D
    fc: layers.Dense
    width: float = no_derivative()

    def __init__(self, width: float = 1.0, classes: int = 1000, stage_repeats=_REPEATS):
        if width not in _WIDTHS:
            raise ValueError(f"ShuffleNetV2: width must be one of 0.5, 1.0, 1.5, 2.0, got "
                             f"{width!r}.")
        if len(stage_repeats) != 3 or not all(isinstance(n, int) and n > 0
                                               for n in stage_repeats):
            raise ValueError(f"ShuffleNetV2: stage_repeats must be 3 positive ints, got "
                             f"{stage_repeats!r}.")
        channels = _WIDTHS[width]
        self.width = width
        self.conv1 = layers.Conv2DNormActivation(3, channels[0], strides=2, activation=relu)
        self.stages, inp = [], channels[0]
        for repeats, out in zip(stage_repeats, channels[1:4], strict=True):
            self.stages.append([ShuffleUnit(inp, out, 2)]
                               + [ShuffleUnit(out, out, 1) for _ in range(repeats - 1)])
            inp = out
        self.conv5 = layers.Conv2DNormActivation(inp, channels[4], kernel_size=1, activation=relu)
        self.pool = layers.GlobalAvgPool2D()
        self.fc = layers.Dense(channels[4], classes)

    def __call__(self, x):
        x = self.conv1(x)
        # Torch's max pool pads one -inf on each side (TF "same" would pad only
        # after the image, shifting every window).
        x = nn.max_pool2d(x, pool_size=3, strides=2, padding=((1, 1), (1, 1)))
        for stage in self.stages:
            for unit in stage:
                x = unit(x)
        return x.sequenced(self.conv5, self.pool, self.fc)
