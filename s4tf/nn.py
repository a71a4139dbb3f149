"""``s4tf.nn``: the functional neural-network ops (convolutions, pools, batch norm, resampling, attention).

Channels-last data (NHWC and its 1-D/3-D analogues) and HWIO filters, as in
Swift for TensorFlow; "same"/"valid" padding with TensorFlow's semantics. Every
function is differentiable in reverse and forward mode, to any order.

Examples
--------
>>> import s4tf
>>> x = s4tf.ones([1, 8, 8, 3])
>>> y = s4tf.nn.conv2d(x, s4tf.ones([3, 3, 3, 4]), padding="same")
>>> s4tf.nn.max_pool2d(y, pool_size=2, strides=2).shape
(1, 4, 4, 4)
"""

from __future__ import annotations

from .ops.attention import scaled_dot_product_attention
from .ops.channel_shuffle import channel_shuffle
from .ops.convolution import conv1d, conv2d, conv3d, depthwise_conv2d, separable_conv2d
from .ops.normalization import batch_norm
from .ops.pooling import (
    adaptive_avg_pool2d,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    global_avg_pool1d,
    global_avg_pool2d,
    global_avg_pool3d,
    global_max_pool1d,
    global_max_pool2d,
    global_max_pool3d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
)
from .ops.resampling import (
    upsampling1d,
    upsampling2d,
    upsampling3d,
    zero_padding1d,
    zero_padding2d,
    zero_padding3d,
)
from .ops.transposed_convolution import conv1d_transpose, conv2d_transpose, conv3d_transpose

__all__ = [
    "adaptive_avg_pool2d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "batch_norm",
    "channel_shuffle", "conv1d",
    "conv1d_transpose", "conv2d", "conv2d_transpose", "conv3d", "conv3d_transpose",
    "depthwise_conv2d", "global_avg_pool1d",
    "global_avg_pool2d", "global_avg_pool3d", "global_max_pool1d", "global_max_pool2d",
    "global_max_pool3d", "max_pool1d", "max_pool2d", "max_pool3d",
    "scaled_dot_product_attention", "separable_conv2d", "upsampling1d", "upsampling2d",
    "upsampling3d", "zero_padding1d", "zero_padding2d", "zero_padding3d",
]
