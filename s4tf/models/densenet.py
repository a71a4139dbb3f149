"""DenseNet (Huang et al., CVPR 2017), as torchvision builds it."""

from __future__ import annotations

from .. import layers
from ..activations import relu
from ..layers import Layer
from ..layers.layer import check_input_shape
from ..ops import concat
from .blocks import batch_norm, conv, padded

__all__ = ["DenseBlock", "DenseLayer", "DenseNet", "DenseNet121", "Transition"]


class DenseLayer(Layer):
    """BN-ReLU-conv1x1 to ``bottleneck_size * growth_rate`` channels, then BN-ReLU-conv3x3 to ``growth_rate``.

    Examples
    --------
    >>> import s4tf
    >>> layer = s4tf.models.densenet.DenseLayer(8, growth_rate=4, bottleneck_size=4)
    >>> layer(s4tf.ones([1, 5, 5, 8])).shape
    (1, 5, 5, 4)
    """

    norm1: layers.BatchNorm
    conv1: layers.Conv2D
    norm2: layers.BatchNorm
    conv2: layers.Conv2D

    def __init__(self, channels_in: int, growth_rate: int, bottleneck_size: int):
        inner = bottleneck_size * growth_rate
        self.norm1 = batch_norm(channels_in)
        self.conv1 = conv(1, channels_in, inner)
        self.norm2 = batch_norm(inner)
        self.conv2 = conv(3, inner, growth_rate)

    def __call__(self, x):
        y = self.conv1(relu(self.norm1(x)))
        return padded(self.conv2, relu(self.norm2(y)))


class DenseBlock(Layer):
    """Dense layers, each fed the concatenation of the block's input and every earlier layer's output.

    Examples
    --------
    >>> import s4tf
    >>> block = s4tf.models.densenet.DenseBlock(3, 8, growth_rate=4, bottleneck_size=2)
    >>> block(s4tf.ones([1, 5, 5, 8])).shape
    (1, 5, 5, 20)
    """

    layers: list[DenseLayer]

    def __init__(self, count: int, channels_in: int, growth_rate: int, bottleneck_size: int):
        self.layers = [DenseLayer(channels_in + i * growth_rate, growth_rate, bottleneck_size)
                       for i in range(count)]

    def __call__(self, x):
        features = [x]
        for layer in self.layers:
            features.append(layer(concat(features, axis=-1)))
        return concat(features, axis=-1)


class Transition(Layer):
    """BN-ReLU-conv1x1 (halving the channels) and 2x2 average pooling between dense blocks.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.models.densenet.Transition(8, 4)(s4tf.ones([1, 6, 6, 8])).shape
    (1, 3, 3, 4)
    """

    norm: layers.BatchNorm
    conv: layers.Conv2D
    pool: layers.AvgPool2D

    def __init__(self, channels_in: int, channels_out: int):
        self.norm = batch_norm(channels_in)
        self.conv = conv(1, channels_in, channels_out)
        self.pool = layers.AvgPool2D(pool_size=2, strides=2)

    def __call__(self, x):
        return self.pool(self.conv(relu(self.norm(x))))


class DenseNet(Layer):
    """Densely connected convolutional networks, torchvision's ``DenseNet`` layout, NHWC.

    A 7x7/2 convolution, BatchNorm, ReLU and a 3x3/2 max pool (padded as
    PyTorch pads), then dense blocks of ``block_sizes`` layers separated by
    transitions that halve the channels and the resolution, a final
    BatchNorm and ReLU, global average pooling and the classifier.
    Convolutions have no bias; BatchNorm uses epsilon 1e-5, momentum 0.9.
    :class:`DenseNet121` is ``block_sizes=(6, 12, 24, 16)``, growth rate 32.

    Parameters
    ----------
    block_sizes : tuple of ints, default (6, 12, 24, 16)
    growth_rate : int, default 32
    initial_features : int, default 64
        Channels of the first convolution.
    bottleneck_size : int, default 4
        The 1x1 convolutions produce ``bottleneck_size * growth_rate`` channels.
    classes : int, default 1000
    channels : int, default 3
        Input channels.

    Notes
    -----
    Fields: ``conv0``, ``norm0``, ``pool0``, ``dense_blocks``,
    ``transitions`` (one fewer), ``norm5``, ``pool``, ``classifier``.

    Examples
    --------
    >>> import s4tf
    >>> model = s4tf.models.DenseNet(block_sizes=(2, 2), growth_rate=4, initial_features=8,
    ...                              classes=10)
    >>> model(s4tf.zeros([2, 32, 32, 3])).shape
    (2, 10)
    """

    conv0: layers.Conv2D
    norm0: layers.BatchNorm
    pool0: layers.MaxPool2D
    dense_blocks: list[DenseBlock]
    transitions: list[Transition]
    norm5: layers.BatchNorm
    pool: layers.GlobalAvgPool2D
    classifier: layers.Dense

    def __init__(self, block_sizes=(6, 12, 24, 16), growth_rate: int = 32,
                 initial_features: int = 64, bottleneck_size: int = 4, classes: int = 1000,
                 channels: int = 3):
        if not block_sizes or not all(isinstance(n, int) and n >= 1 for n in block_sizes):
            raise ValueError(f"DenseNet: block_sizes must be one or more ints >= 1 (layers per "
                             f"dense block); received block_sizes={block_sizes!r}.")
        self.conv0 = conv(7, channels, initial_features, strides=2)
        self.norm0 = batch_norm(initial_features)
        self.pool0 = layers.MaxPool2D(pool_size=3, strides=2)
        self.dense_blocks, self.transitions = [], []
        features = initial_features
        for i, count in enumerate(block_sizes):
            self.dense_blocks.append(DenseBlock(count, features, growth_rate, bottleneck_size))
            features += count * growth_rate
            if i < len(block_sizes) - 1:
                self.transitions.append(Transition(features, features // 2))
                features //= 2
        self.norm5 = batch_norm(features)
        self.pool = layers.GlobalAvgPool2D()
        self.classifier = layers.Dense(features, classes)

    def __call__(self, x):
        check_input_shape(self, x, (None, None, None, self.conv0.filter.shape[2]),
                          "DenseNet takes NHWC images (batch, height, width, channels).")
        x = padded(self.pool0, relu(self.norm0(padded(self.conv0, x))))
        for i, block in enumerate(self.dense_blocks):
            x = block(x)
            if i < len(self.transitions):
                x = self.transitions[i](x)
        return self.classifier(self.pool(relu(self.norm5(x))))


class DenseNet121(DenseNet):
    """DenseNet-121: torchvision's ``densenet121`` (blocks of 6, 12, 24, 16 layers, growth rate 32).

    7,978,856 parameters at ``classes=1000``, as torchvision's. The layout of
    :class:`DenseNet`; ``DenseNet121(classes=10)`` changes only the classifier.

    Examples
    --------
    >>> import s4tf
    >>> model = s4tf.models.DenseNet121()
    >>> s4tf.parameter_count(model)
    7978856
    >>> model(s4tf.zeros([1, 32, 32, 3])).shape
    (1, 1000)
    """

    def __init__(self, classes: int = 1000, channels: int = 3):
        super().__init__(block_sizes=(6, 12, 24, 16), growth_rate=32, initial_features=64,
                         bottleneck_size=4, classes=classes, channels=channels)
