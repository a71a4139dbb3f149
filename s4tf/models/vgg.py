"""VGG (Simonyan and Zisserman 2015), as torchvision builds it."""

from __future__ import annotations

from .. import layers
from ..activations import relu
from ..differentiable import no_derivative
from ..layers import Layer
from ..layers.layer import check_input_shape

__all__ = ["VGG"]

# Convolutions per stage (each stage ends in a 2x2 max pool); widths 64, 128, 256, 512, 512.
STAGES = {11: (1, 1, 2, 2, 2), 13: (2, 2, 2, 2, 2), 16: (2, 2, 3, 3, 3), 19: (2, 2, 4, 4, 4)}
STAGE_WIDTHS = (1, 2, 4, 8, 8)


class VGG(Layer):
    """VGG-11/13/16/19 (configurations A, B, D, E), torchvision's ``vgg*`` without BatchNorm.

    3x3 "same" convolutions with ReLU in five stages, each closed by a 2x2
    max pool; then, as torchvision does, an adaptive average pool to 7x7
    (so any input of at least 32x32 works), flattening and three dense layers
    (4096, 4096, ``classes``) with ReLU and dropout between them.

    Parameter counts at ``classes=1000``, equal to torchvision's: VGG-16
    138,357,544; VGG-19 143,667,240 (VGG-11 132,863,336; VGG-13 133,047,848).

    Parameters
    ----------
    depth : {11, 13, 16, 19}, default 16
    classes : int, default 1000
    width : int, default 64
        Channels of the first stage (later stages: 2x, 4x, 8x, 8x).
    hidden : int, default 4096
        Width of the two hidden dense layers.
    dropout : float, default 0.5
        Dropout probability before the second and third dense layers.
    channels : int, default 3
        Input channels.

    Notes
    -----
    Fields: ``features`` (the list of :class:`~s4tf.layers.Conv2D` and
    :class:`~s4tf.layers.MaxPool2D` layers, in order), ``avgpool``,
    ``flatten``, ``fc1``, ``dropout1``, ``fc2``, ``dropout2``, ``fc3``.

    Examples
    --------
    >>> import s4tf
    >>> model = s4tf.models.VGG(depth=16, width=4, hidden=32, classes=10)
    >>> model(s4tf.zeros([2, 32, 32, 3])).shape
    (2, 10)
    """

    features: list[layers.Conv2D | layers.MaxPool2D]
    avgpool: layers.AdaptiveAvgPool2D
    flatten: layers.Flatten
    fc1: layers.Dense
    dropout1: layers.Dropout
    fc2: layers.Dense
    dropout2: layers.Dropout
    fc3: layers.Dense
    depth: int = no_derivative()

    def __init__(self, depth: int = 16, classes: int = 1000, width: int = 64,
                 hidden: int = 4096, dropout: float = 0.5, channels: int = 3):
        if depth not in STAGES:
            raise ValueError(f"VGG: depth={depth!r} is not a VGG depth; valid depths are "
                             f"{', '.join(map(str, STAGES))}.")
        self.features = []
        for convolutions, factor in zip(STAGES[depth], STAGE_WIDTHS, strict=True):
            for _ in range(convolutions):
                self.features.append(layers.Conv2D(filter_shape=(3, 3, channels, width * factor),
                                                   padding="same", activation=relu))
                channels = width * factor
            self.features.append(layers.MaxPool2D(pool_size=2, strides=2))
        self.avgpool = layers.AdaptiveAvgPool2D(output_size=7)
        self.flatten = layers.Flatten()
        self.fc1 = layers.Dense(7 * 7 * channels, hidden, activation=relu)
        self.dropout1 = layers.Dropout(probability=dropout)
        self.fc2 = layers.Dense(hidden, hidden, activation=relu)
        self.dropout2 = layers.Dropout(probability=dropout)
        self.fc3 = layers.Dense(hidden, classes)
        self.depth = depth

    def __call__(self, x):
        check_input_shape(self, x, (None, None, None, self.features[0].filter.shape[2]),
                          "VGG takes NHWC images (batch, height, width, channels), at least 32x32.")
        for layer in self.features:
            x = layer(x)
        return x.sequenced(self.avgpool, self.flatten, self.fc1, self.dropout1, self.fc2,
                           self.dropout2, self.fc3)
