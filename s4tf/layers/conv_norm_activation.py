"""Conv2DNormActivation: convolution, BatchNorm and activation, torchvision's building block."""

from __future__ import annotations

import typing

from .. import dtypes as _dtypes
from .. import nn
from .._sizes import sizes
from ..activations import relu
from ..differentiable import no_derivative
from .convolutional import Conv2D, DepthwiseConv2D
from .layer import Layer
from .normalization import BatchNorm

__all__ = ["Conv2DNormActivation"]


class Conv2DNormActivation(Layer):
    """A bias-free convolution, ``BatchNorm`` and an activation, padded as torchvision pads.

    ``torchvision.ops.Conv2dNormActivation`` for NHWC images, the unit that
    MobileNetV2/V3 and EfficientNet are built from: ``conv`` (a ``Conv2D``, or
    a ``DepthwiseConv2D`` with ``depthwise=True``) and ``bn`` (torchvision's
    ``0`` and ``1``), then ``activation`` (``None`` for none, as a projection).

    Padding is ``(kernel_size - 1) // 2`` zeros on every side, as
    torchvision's. With stride 1 that is TF "same" padding; with stride 2 TF
    "same" would put the single padding row of an even-sized input after the
    image only, shifting every window by one pixel against the reference, so
    the layer pads explicitly and convolves with "valid" padding.

    Parameters
    ----------
    input_channels, output_channels : int
        ``output_channels`` must equal ``input_channels`` when ``depthwise``.
    kernel_size : int, default 3
        Odd (torchvision's symmetric padding needs it).
    strides : int, default 1
    depthwise : bool, default False
        One filter per channel (torchvision's ``groups=input_channels``).
    activation : callable or None, default s4tf.relu
    momentum, epsilon : float, default 0.9, 1e-5
        BatchNorm's, in s4tf's convention (torch's ``momentum=0.1`` is 0.9 here).
    dtype : DType, default float32

    Examples
    --------
    >>> import s4tf
    >>> block = s4tf.layers.Conv2DNormActivation(3, 8, strides=2, activation=s4tf.relu6)
    >>> block(s4tf.ones([1, 32, 32, 3])).shape
    (1, 16, 16, 8)
    >>> s4tf.parameter_count(block)          # 3*3*3*8 filter + BatchNorm scale and offset
    232
    """

    conv: Conv2D | DepthwiseConv2D
    bn: BatchNorm
    activation: typing.Callable | None = no_derivative()
    padding: int = no_derivative()

    def __init__(self, input_channels: int, output_channels: int, kernel_size: int = 3,
                 strides: int = 1, depthwise: bool = False, activation=relu,
                 momentum: float = 0.9, epsilon: float = 1e-5, dtype=_dtypes.float32):
        input_channels, output_channels, kernel_size, strides = sizes(
            "Conv2DNormActivation", input_channels=input_channels,
            output_channels=output_channels, kernel_size=kernel_size, strides=strides)
        if kernel_size % 2 == 0:
            raise ValueError(f"Conv2DNormActivation: kernel_size must be a positive odd int "
                             f"(padding is (kernel_size - 1) // 2 on each side), got "
                             f"{kernel_size!r}.")
        if depthwise and output_channels != input_channels:
            raise ValueError(
                f"Conv2DNormActivation: a depthwise convolution keeps the channel count, but "
                f"input_channels={input_channels} and output_channels={output_channels}."
            )
        pad = (kernel_size - 1) // 2
        self.padding = pad if strides > 1 else 0
        conv_padding = "valid" if strides > 1 else "same"
        if depthwise:
            self.conv = DepthwiseConv2D(filter_shape=(kernel_size, kernel_size, input_channels, 1),
                                        strides=strides, padding=conv_padding, use_bias=False,
                                        dtype=dtype)
        else:
            self.conv = Conv2D(filter_shape=(kernel_size, kernel_size, input_channels,
                                             output_channels),
                               strides=strides, padding=conv_padding, use_bias=False, dtype=dtype)
        self.bn = BatchNorm(output_channels, momentum=momentum, epsilon=epsilon, dtype=dtype)
        self.activation = activation

    def __call__(self, input):
        if self.padding:
            input = nn.zero_padding2d(input, padding=self.padding)
        out = self.bn(self.conv(input))
        return out if self.activation is None else self.activation(out)
