"""SqueezeNet 1.0 and 1.1 (Iandola et al. 2016), as torchvision's ``squeezenet1_*``."""

from __future__ import annotations

from .. import layers, nn
from ..activations import relu
from ..differentiable import no_derivative
from ..layers import Layer
from ..ops import concat

__all__ = ["SqueezeNet"]

# Each version's features: ("conv", output channels, kernel), ("pool",) or
# ("fire", squeeze, expand1x1, expand3x3), in torchvision's order.
_VERSIONS = {
    "1.0": (("conv", 96, 7), ("pool",), ("fire", 16, 64, 64), ("fire", 16, 64, 64),
            ("fire", 32, 128, 128), ("pool",), ("fire", 32, 128, 128), ("fire", 48, 192, 192),
            ("fire", 48, 192, 192), ("fire", 64, 256, 256), ("pool",), ("fire", 64, 256, 256)),
    "1.1": (("conv", 64, 3), ("pool",), ("fire", 16, 64, 64), ("fire", 16, 64, 64), ("pool",),
            ("fire", 32, 128, 128), ("fire", 32, 128, 128), ("pool",), ("fire", 48, 192, 192),
            ("fire", 48, 192, 192), ("fire", 64, 256, 256), ("fire", 64, 256, 256)),
}


class CeilMaxPool2D(Layer):
    """3x3 stride-2 max pooling with torch's ``ceil_mode=True`` output size.

    Neither TF padding gives torch's ``ceil((n - 3) / 2) + 1``: "valid" loses the last row of
    odd-remainder sizes (SqueezeNet 1.0 at 224 would pool 109 -> 54 either way,
    but 54 -> 26 instead of 27), and "same" pads a 109 map to 55 rows.
    Explicit padding of one row and column after the image gives exactly the
    ceil-mode windows: the extra window torch adds is the one that reads the
    padding, which never wins a maximum, so the values are torch's too.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.models.squeezenet import CeilMaxPool2D
    >>> CeilMaxPool2D()(s4tf.ones([1, 54, 54, 2])).shape
    (1, 27, 27, 2)
    """

    def __call__(self, x):
        return nn.max_pool2d(x, pool_size=3, strides=2, padding=((0, 1), (0, 1)))


class Fire(Layer):
    """SqueezeNet's fire module: a 1x1 squeeze, then 1x1 and 3x3 expands concatenated.

    All three convolutions have biases and ReLU, as torchvision's ``Fire``
    (same field names).

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.models.squeezenet import Fire
    >>> Fire(96, 16, 64, 64)(s4tf.ones([1, 8, 8, 96])).shape
    (1, 8, 8, 128)
    """

    squeeze: layers.Conv2D
    expand1x1: layers.Conv2D
    expand3x3: layers.Conv2D

    def __init__(self, input_channels: int, squeeze_channels: int, expand1x1_channels: int,
                 expand3x3_channels: int):
        self.squeeze = layers.Conv2D(filter_shape=(1, 1, input_channels, squeeze_channels),
                                     activation=relu)
        self.expand1x1 = layers.Conv2D(filter_shape=(1, 1, squeeze_channels, expand1x1_channels),
                                       activation=relu)
        self.expand3x3 = layers.Conv2D(filter_shape=(3, 3, squeeze_channels, expand3x3_channels),
                                       padding="same", activation=relu)

    def __call__(self, x):
        squeezed = self.squeeze(x)
        return concat([self.expand1x1(squeezed), self.expand3x3(squeezed)], axis=-1)


class SqueezeNet(Layer):
    """SqueezeNet 1.0 or 1.1: fire modules and a convolutional classifier.

    Matches torchvision's ``squeezenet1_0`` / ``squeezenet1_1`` layer for
    layer: a stride-2 convolution (7x7 with 96 filters in 1.0, 3x3 with 64 in
    1.1, no padding), :class:`Fire` modules between three 3x3 stride-2 max
    pools in torch's ceil mode (:class:`CeilMaxPool2D`), then dropout, a 1x1
    convolution to ``classes`` with ReLU, and global average pooling. Inputs
    are NHWC images of any size >= 32x32.

    ``features`` holds torchvision's ``features`` in order (its ReLU modules
    are the convolutions' activations here); ``classifier`` is torchvision's
    ``classifier[1]``.

    Parameters
    ----------
    version : str, default "1.0"
        ``"1.0"`` or ``"1.1"``.
    classes : int, default 1000
    dropout : float, default 0.5

    Notes
    -----
    Parameter counts at ``classes=1000``: 1,248,424 (1.0) and 1,235,496 (1.1),
    torchvision's.

    References
    ----------
    Iandola et al., "SqueezeNet: AlexNet-level accuracy with 50x fewer
    parameters and <0.5MB model size", 2016; ``torchvision.models.squeezenet1_0``.

    Examples
    --------
    >>> import s4tf
    >>> model = s4tf.models.SqueezeNet(version="1.1", classes=10)
    >>> model(s4tf.zeros([1, 32, 32, 3])).shape
    (1, 10)
    """

    features: list[layers.Conv2D | CeilMaxPool2D | Fire]
    dropout: layers.Dropout
    classifier: layers.Conv2D
    pool: layers.GlobalAvgPool2D
    version: str = no_derivative()

    def __init__(self, version: str = "1.0", classes: int = 1000, dropout: float = 0.5):
        if version not in _VERSIONS:
            raise ValueError(f"SqueezeNet: version must be '1.0' or '1.1', got {version!r}.")
        self.version = version
        self.features, channels = [], 3
        for kind, *sizes in _VERSIONS[version]:
            if kind == "conv":
                out, kernel = sizes
                self.features.append(layers.Conv2D(filter_shape=(kernel, kernel, channels, out),
                                                   strides=2, activation=relu))
                channels = out
            elif kind == "pool":
                self.features.append(CeilMaxPool2D())
            else:
                self.features.append(Fire(channels, *sizes))
                channels = sizes[1] + sizes[2]
        self.dropout = layers.Dropout(dropout)
        self.classifier = layers.Conv2D(filter_shape=(1, 1, channels, classes), activation=relu)
        self.pool = layers.GlobalAvgPool2D()

    def __call__(self, x):
        for layer in self.features:
            x = layer(x)
        return x.sequenced(self.dropout, self.classifier, self.pool)
