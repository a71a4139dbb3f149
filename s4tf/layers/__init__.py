"""Neural-network layers: immutable, differentiable dataclasses (docs/api/layers.md).

Field names, layouts and defaults follow Swift for TensorFlow (in snake_case):
``Dense.weight`` is ``(in, out)``, ``Conv2D.filter`` is ``(h, w, in, out)``,
biases start at zero and weights are Glorot-uniform.

Examples
--------
>>> import s4tf
>>> from s4tf import layers
>>> model = layers.Sequential(layers.Flatten(), layers.Dense(4, 2, activation=s4tf.relu))
>>> model(s4tf.ones([3, 2, 2])).shape
(3, 2)
"""

from .attention import MultiHeadAttention
from .channel_shuffle import ChannelShuffle
from .conv_norm_activation import Conv2DNormActivation
from .convolutional import (
    Conv1D,
    Conv2D,
    Conv3D,
    DepthwiseConv2D,
    SeparableConv1D,
    SeparableConv2D,
)
from .dense import Dense
from .dropout import AlphaDropout, Dropout, GaussianDropout, GaussianNoise
from .embedding import Embedding
from .layer import Function, Layer, Sequential
from .normalization import BatchNorm, GroupNorm, InstanceNorm, LayerNorm
from .pooling import (
    AdaptiveAvgPool2D,
    AvgPool1D,
    AvgPool2D,
    AvgPool3D,
    GlobalAvgPool1D,
    GlobalAvgPool2D,
    GlobalAvgPool3D,
    GlobalMaxPool1D,
    GlobalMaxPool2D,
    GlobalMaxPool3D,
    MaxPool1D,
    MaxPool2D,
    MaxPool3D,
)
from .recurrent import GRUCell, LSTMCell, SimpleRNNCell
from .reshaping import (
    Flatten,
    Reshape,
    UpSampling1D,
    UpSampling2D,
    UpSampling3D,
    ZeroPadding1D,
    ZeroPadding2D,
    ZeroPadding3D,
)
from .sequence import GRU, LSTM, RNN, Bidirectional
from .shared import Shared
from .squeeze_excitation import SqueezeExcitation
from .stochastic_depth import StochasticDepth
from .transposed import TransposedConv1D, TransposedConv2D, TransposedConv3D

__all__ = [
    "AdaptiveAvgPool2D", "AlphaDropout", "AvgPool1D", "AvgPool2D", "AvgPool3D", "BatchNorm",
    "Bidirectional", "ChannelShuffle", "Conv1D", "Conv2D", "Conv2DNormActivation", "Conv3D",
    "Dense", "DepthwiseConv2D", "Dropout", "Embedding",
    "Flatten", "Function", "GRU", "GRUCell", "GaussianDropout", "GaussianNoise",
    "GlobalAvgPool1D", "GlobalAvgPool2D", "GlobalAvgPool3D", "GlobalMaxPool1D",
    "GlobalMaxPool2D", "GlobalMaxPool3D", "GroupNorm", "InstanceNorm", "LSTM", "LSTMCell",
    "Layer", "LayerNorm", "MaxPool1D", "MaxPool2D", "MaxPool3D", "MultiHeadAttention", "RNN",
    "Reshape", "SeparableConv1D", "SeparableConv2D", "Sequential", "Shared", "SimpleRNNCell",
    "SqueezeExcitation", "StochasticDepth",
    "TransposedConv1D", "TransposedConv2D", "TransposedConv3D", "UpSampling1D",
    "UpSampling2D", "UpSampling3D", "ZeroPadding1D", "ZeroPadding2D", "ZeroPadding3D",
]
