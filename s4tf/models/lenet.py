"""LeNet-5, the model of Figure 6 of the Swift for TensorFlow paper."""

from __future__ import annotations

from .. import layers
from ..activations import relu
from ..layers import Layer

__all__ = ["LeNet"]


def _pooled(size: int) -> int:
    return size // 2


class LeNet(Layer):
    """LeCun et al.'s LeNet-5 with ReLU, as in the S4TF paper (Figure 6).

    Two 5x5 convolutions, each followed by 2x2 average pooling, then three
    dense layers (120, 84, ``classes``). The default takes 28x28x1 images
    (MNIST): ``conv1`` keeps the size ("same"), ``conv2`` shrinks it ("valid"),
    so ``fc1`` sees 5*5*16 = 400 features. For small images such as the
    bundled 8x8 Digits, use :meth:`for_digits` (``conv2_padding="same"``,
    since a valid 5x5 convolution of a 4x4 map is impossible).

    Parameters
    ----------
    image_size : int
        Height and width of the (square) input images.
    channels : int
        Input channels (1 for grey images).
    classes : int
        Number of outputs (logits).
    conv2_padding : str
        ``"valid"`` (the paper) or ``"same"`` (small inputs).

    Examples
    --------
    >>> import s4tf
    >>> model = s4tf.models.LeNet()
    >>> model(s4tf.zeros([2, 28, 28, 1])).shape
    (2, 10)
    >>> s4tf.models.LeNet.for_digits()(s4tf.zeros([2, 8, 8, 1])).shape
    (2, 10)
    """

    conv1: layers.Conv2D
    pool1: layers.AvgPool2D
    conv2: layers.Conv2D
    pool2: layers.AvgPool2D
    flatten: layers.Flatten
    fc1: layers.Dense
    fc2: layers.Dense
    fc3: layers.Dense

    def __init__(self, image_size: int = 28, channels: int = 1, classes: int = 10,
                 conv2_padding: str = "valid"):
        if conv2_padding not in ("valid", "same"):
            raise ValueError(f"LeNet: conv2_padding must be 'valid' or 'same'; received "
                             f"conv2_padding={conv2_padding!r}.")
        after_conv2 = _pooled(image_size) - (4 if conv2_padding == "valid" else 0)
        features = _pooled(after_conv2)
        if features < 1:
            raise ValueError(
                f"LeNet: {image_size}x{image_size} images are too small for its layers with "
                f"conv2_padding={conv2_padding!r} (need image_size >= 12 with 'valid', >= 4 "
                "with 'same'); use LeNet.for_digits() for 8x8 images."
            )
        self.conv1 = layers.Conv2D(filter_shape=(5, 5, channels, 6), padding="same",
                                   activation=relu)
        self.pool1 = layers.AvgPool2D(pool_size=(2, 2), strides=(2, 2))
        self.conv2 = layers.Conv2D(filter_shape=(5, 5, 6, 16), padding=conv2_padding,
                                   activation=relu)
        self.pool2 = layers.AvgPool2D(pool_size=(2, 2), strides=(2, 2))
        self.flatten = layers.Flatten()
        self.fc1 = layers.Dense(input_size=features * features * 16, output_size=120,
                                activation=relu)
        self.fc2 = layers.Dense(input_size=120, output_size=84, activation=relu)
        self.fc3 = layers.Dense(input_size=84, output_size=classes)

    @classmethod
    def for_digits(cls, classes: int = 10) -> LeNet:
        """LeNet for the bundled 8x8x1 ``datasets.Digits`` images.

        Examples
        --------
        >>> import s4tf
        >>> s4tf.models.LeNet.for_digits().fc1.weight.shape
        (64, 120)
        """
        return cls(image_size=8, channels=1, classes=classes, conv2_padding="same")

    def __call__(self, x):
        return x.sequenced(self.conv1, self.pool1, self.conv2, self.pool2,
                           self.flatten, self.fc1, self.fc2, self.fc3)
