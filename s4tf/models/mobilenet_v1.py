"""MobileNet (v1, Howard et al. 2017), as Keras Applications' ``MobileNet``."""

from __future__ import annotations

from .. import layers
from ..activations import relu6
from ..differentiable import no_derivative
from ..layers import Layer
from ._settings import check_settings

__all__ = ["MobileNetV1"]

# (pointwise filters, stride) of Keras's 13 depthwise-separable blocks.
_BLOCKS = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1),
           (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1))
#: Keras's ``conv_pad`` before a stride-2 depthwise convolution: one row and column after.
KERAS_PAD = ((0, 1), (0, 1))


class DepthwiseSeparableBlock(Layer):
    """MobileNet's block: 3x3 depthwise convolution and 1x1 pointwise one, each with BN and ReLU6.

    Field names are Keras's (``conv_dw_<i>``, ``conv_dw_<i>_bn``, ``conv_pw_<i>``,
    ``conv_pw_<i>_bn`` without the block number). With stride 2 the depthwise
    convolution is "valid" and runs with one row and column of padding after
    the image (:data:`KERAS_PAD`), as Keras's ``conv_pad_<i>``.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.models.mobilenet_v1 import DepthwiseSeparableBlock
    >>> DepthwiseSeparableBlock(8, 16, strides=2)(s4tf.ones([1, 8, 8, 8])).shape
    (1, 4, 4, 16)
    """

    conv_dw: layers.DepthwiseConv2D
    conv_dw_bn: layers.BatchNorm
    conv_pw: layers.Conv2D
    conv_pw_bn: layers.BatchNorm
    strides: int = no_derivative()

    def __init__(self, input_channels: int, output_channels: int, strides: int = 1,
                 depth_multiplier: int = 1):
        expanded = input_channels * depth_multiplier
        self.strides = strides
        self.conv_dw = layers.DepthwiseConv2D(
            filter_shape=(3, 3, input_channels, depth_multiplier), strides=strides,
            padding="same" if strides == 1 else "valid", use_bias=False)
        self.conv_dw_bn = layers.BatchNorm(expanded)
        self.conv_pw = layers.Conv2D(filter_shape=(1, 1, expanded, output_channels),
                                     use_bias=False)
        self.conv_pw_bn = layers.BatchNorm(output_channels)

    def __call__(self, x):
        # The stride-2 "valid" layer runs with Keras's conv_pad for this call (no padded copy).
        x = self.conv_dw(x, padding=KERAS_PAD) if self.strides != 1 else self.conv_dw(x)
        x = relu6(self.conv_dw_bn(x))
        return relu6(self.conv_pw_bn(self.conv_pw(x)))


class MobileNetV1(Layer):
    """MobileNet: 13 depthwise-separable blocks and a 1x1 convolutional classifier.

    Matches Keras Applications' ``MobileNet`` (``include_top=True``) layer for
    layer: ``conv1`` (3x3, stride 2, "same") with BatchNorm and ReLU6,
    :class:`DepthwiseSeparableBlock` s with ``int(filters * width_multiplier)``
    pointwise filters, global average pooling, dropout and ``conv_preds``, a
    1x1 convolution with bias to ``classes`` (returned as ``(batch,
    classes)`` logits; Keras applies the softmax in the model). BatchNorm has
    Keras's defaults (momentum 0.99, epsilon 1e-3).

    Parameters
    ----------
    width_multiplier : float, default 1.0
        Keras's ``alpha``.
    classes : int, default 1000
    depth_multiplier : int, default 1
        Depthwise filters per input channel (Keras's ``depth_multiplier``).
    dropout : float, default 1e-3
        Keras's default.
    block_settings : sequence of (filters, stride), optional
        The depthwise-separable blocks; the default is Keras's 13 (filters
        before ``width_multiplier``).

    Notes
    -----
    Parameter count (trainable, as Keras reports it): 4,231,976 at
    ``width_multiplier=1.0, classes=1000``.

    References
    ----------
    Howard et al., "MobileNets: Efficient Convolutional Neural Networks for
    Mobile Vision Applications", 2017; ``keras.applications.MobileNet``.

    Examples
    --------
    >>> import s4tf
    >>> model = s4tf.models.MobileNetV1(width_multiplier=0.25, classes=10)
    >>> model(s4tf.zeros([1, 32, 32, 3])).shape
    (1, 10)
    """

    conv1: layers.Conv2D
    conv1_bn: layers.BatchNorm
    blocks: list[DepthwiseSeparableBlock]
    pool: layers.GlobalAvgPool2D
    dropout: layers.Dropout
    conv_preds: layers.Conv2D

    def __init__(self, width_multiplier: float = 1.0, classes: int = 1000,
                 depth_multiplier: int = 1, dropout: float = 1e-3, block_settings=_BLOCKS):
        if not width_multiplier > 0 or int(32 * width_multiplier) < 1:
            raise ValueError(f"MobileNetV1: width_multiplier must be positive and leave at "
                             f"least one channel, got {width_multiplier!r}.")
        if not isinstance(depth_multiplier, int) or depth_multiplier < 1:
            raise ValueError(f"MobileNetV1: depth_multiplier must be a positive int, got "
                             f"{depth_multiplier!r}.")
        block_settings = check_settings("MobileNetV1", "block_settings", block_settings,
                                        "(filters, stride)")
        channels = int(32 * width_multiplier)
        self.conv1 = layers.Conv2D(filter_shape=(3, 3, 3, channels), strides=2, padding="same",
                                   use_bias=False)
        self.conv1_bn = layers.BatchNorm(channels)
        self.blocks = []
        for filters, stride in block_settings:
            out = int(filters * width_multiplier)
            self.blocks.append(DepthwiseSeparableBlock(channels, out, stride, depth_multiplier))
            channels = out
        self.pool = layers.GlobalAvgPool2D()
        self.dropout = layers.Dropout(dropout)
        self.conv_preds = layers.Conv2D(filter_shape=(1, 1, channels, classes))

    def __call__(self, x):
        x = relu6(self.conv1_bn(self.conv1(x)))
        for block in self.blocks:
            x = block(x)
        x = self.dropout(self.pool(x))
        # Keras keeps the pooled features as a 1x1 image for its 1x1 convolution.
        logits = self.conv_preds(x.reshape(x.shape[0], 1, 1, x.shape[1]))
        return logits.reshape(x.shape[0], logits.shape[-1])
