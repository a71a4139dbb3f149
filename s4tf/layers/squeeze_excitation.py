"""SqueezeExcitation: channel attention from globally pooled features (Hu et al. 2018)."""

from __future__ import annotations

import typing

from .. import dtypes as _dtypes
from .. import nn
from .._sizes import sizes
from ..activations import relu
from ..differentiable import no_derivative
from ..ops import sigmoid
from .convolutional import Conv2D, channels_last_check
from .layer import Layer

__all__ = ["SqueezeExcitation"]


class SqueezeExcitation(Layer):
    """Rescales each channel by a gate computed from the image's mean features.

    ``y = x * gate(fc2(activation(fc1(mean_hw(x)))))``: a global average pool,
    a 1x1 convolution down to ``squeeze_channels``, ``activation``, a 1x1
    convolution back to ``input_channels`` and ``gate``, broadcast over height
    and width. This is ``torchvision.ops.SqueezeExcitation`` (same fields,
    ``fc1`` and ``fc2``, both with biases) for NHWC images; MobileNetV3 uses
    ``gate=s4tf.hard_sigmoid``, EfficientNet ``activation=s4tf.swish``.

    Parameters
    ----------
    input_channels : int
        Channels of the input (and of the output).
    squeeze_channels : int
        Channels of the bottleneck between ``fc1`` and ``fc2``.
    activation : callable, default s4tf.relu
        Applied after ``fc1``.
    gate : callable, default s4tf.sigmoid
        Applied after ``fc2``; its output scales the input.
    dtype : DType, default float32

    Examples
    --------
    >>> import s4tf
    >>> se = s4tf.layers.SqueezeExcitation(input_channels=8, squeeze_channels=2)
    >>> se(s4tf.ones([1, 4, 4, 8])).shape
    (1, 4, 4, 8)
    >>> s4tf.parameter_count(se)     # 8*2 + 2 + 2*8 + 8
    42
    """

    fc1: Conv2D
    fc2: Conv2D
    activation: typing.Callable = no_derivative()
    gate: typing.Callable = no_derivative()

    def __init__(self, input_channels: int, squeeze_channels: int, activation=relu,
                 gate=sigmoid, dtype=_dtypes.float32):
        input_channels, squeeze_channels = sizes(
            "SqueezeExcitation", input_channels=input_channels, squeeze_channels=squeeze_channels)
        self.fc1 = Conv2D(filter_shape=(1, 1, input_channels, squeeze_channels), dtype=dtype)
        self.fc2 = Conv2D(filter_shape=(1, 1, squeeze_channels, input_channels), dtype=dtype)
        self.activation = activation
        self.gate = gate

    def __call__(self, input):
        channels_last_check(self, input, 2, self.fc1.filter.shape[2])
        pooled = nn.global_avg_pool2d(input)
        squeezed = pooled.reshape(pooled.shape[0], 1, 1, pooled.shape[1])
        scale = self.gate(self.fc2(self.activation(self.fc1(squeezed))))
        return input * scale
