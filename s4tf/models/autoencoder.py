"""Autoencoders: a dense one for flat vectors and a convolutional one for images."""

from __future__ import annotations

import math

from .. import layers
from ..activations import relu, sigmoid, tanh
from ..differentiable import no_derivative
from ..layers import Layer
from ..layers.layer import check_input_shape

__all__ = ["Autoencoder", "Autoencoder2D"]


class Autoencoder(Layer):
    """A dense autoencoder for flat inputs, swift-models' ``Autoencoder1D``.

    The encoder maps ``input_size`` features through ``hidden_sizes`` to a
    ``code_size`` code, each layer followed by relu; the decoder mirrors it
    (relu between layers) back to ``input_size`` with ``tanh`` on the output,
    so inputs should be scaled to ``[-1, 1]``. The default is swift-models'
    784-128-64-12-3-12-64-128-784 network for flattened 28x28 images
    (219,891 parameters). Train with ``s4tf.mean_squared_error(
    predicted=model(x), expected=x)``.

    For images kept as ``(batch, height, width, channels)``, use
    :class:`Autoencoder2D` instead.

    Parameters
    ----------
    input_size : int, default 784
    hidden_sizes : sequence of int, default (128, 64, 12)
        Widths of the encoder's hidden layers (the decoder uses them reversed).
    code_size : int, default 3

    Notes
    -----
    Fields: ``encoder`` and ``decoder`` (lists of :class:`s4tf.layers.Dense`).
    ``encode(x)`` gives the code ``(batch, code_size)``, ``decode(code)`` the
    reconstruction, and ``model(x) == decode(encode(x))``.

    References
    ----------
    swift-models ``Autoencoder/Autoencoder1D/main.swift``.

    Examples
    --------
    >>> import s4tf
    >>> model = s4tf.models.Autoencoder()
    >>> x = s4tf.zeros([2, 784])
    >>> model.encode(x).shape, model(x).shape
    ((2, 3), (2, 784))
    >>> s4tf.parameter_count(model)
    219891
    """

    encoder: list[layers.Dense]
    decoder: list[layers.Dense]

    def __init__(self, input_size: int = 784, hidden_sizes=(128, 64, 12), code_size: int = 3):
        sizes = [input_size, *hidden_sizes, code_size]
        if any(not isinstance(n, int) or n < 1 for n in sizes):
            raise ValueError(f"Autoencoder: sizes must be positive ints; received "
                             f"input_size={input_size!r}, hidden_sizes={hidden_sizes!r}, "
                             f"code_size={code_size!r}.")
        self.encoder = [layers.Dense(n_in, n_out, activation=relu)
                        for n_in, n_out in zip(sizes[:-1], sizes[1:], strict=True)]
        back = sizes[::-1]
        self.decoder = [layers.Dense(n_in, n_out, activation=tanh if i == len(back) - 2 else relu)
                        for i, (n_in, n_out) in enumerate(zip(back[:-1], back[1:], strict=True))]

    def encode(self, x):
        """The code of ``x`` ``(batch, input_size)``: ``(batch, code_size)``."""
        for layer in self.encoder:
            x = layer(x)
        return x

    def decode(self, code):
        """The reconstruction ``(batch, input_size)`` of ``code`` ``(batch, code_size)``."""
        for layer in self.decoder:
            code = layer(code)
        return code

    def __call__(self, x):
        return self.decode(self.encode(x))


def _pooled(size: int) -> int:
    # MaxPool2D with "same" padding and stride 2 rounds up.
    return math.ceil(size / 2)


class Autoencoder2D(Layer):
    """A convolutional autoencoder for NHWC images, swift-models' ``Autoencoder2D``.

    Encoder: three 3x3 "same" convolutions (16, 8, 8 filters, relu), each
    followed by 2x2 max pooling ("same"), so the code is ``(batch, ceil(h/8),
    ceil(w/8), 8)``. Decoder: 3x3 convolutions (8, 8, 16 filters, relu), each
    followed by 2x upsampling, then a 3x3 convolution to ``channels`` with a
    sigmoid, so inputs should be scaled to ``[0, 1]``. Train with
    ``s4tf.mean_squared_error(predicted=model(x), expected=x)``.

    The decoder's third convolution is "valid" when that makes the output the
    input's size (28x28, as swift-models, where the code is 4x4 and 4 -> 8 ->
    16 -> 14 -> 28), and "same" when the size is a multiple of 8. Other sizes
    raise ``ValueError``. 4,385 parameters for one channel.

    Parameters
    ----------
    image_size : int, default 28
        Height and width of the square input images.
    channels : int, default 1

    Notes
    -----
    Fields: ``encoder1`` ... ``encoder6`` (convolutions and pools),
    ``decoder1`` ... ``decoder6`` (convolutions and upsamplings) and
    ``output``; ``encode``, ``decode`` and ``__call__`` as in
    :class:`Autoencoder`.

    References
    ----------
    swift-models ``Autoencoder/Autoencoder2D/main.swift`` (which
    flattens inputs and outputs to 784; this one keeps NHWC images).

    Examples
    --------
    >>> import s4tf
    >>> model = s4tf.models.Autoencoder2D()
    >>> x = s4tf.zeros([2, 28, 28, 1])
    >>> model.encode(x).shape, model(x).shape
    ((2, 4, 4, 8), (2, 28, 28, 1))
    >>> s4tf.models.Autoencoder2D(image_size=32, channels=3)(s4tf.zeros([1, 32, 32, 3])).shape
    (1, 32, 32, 3)
    """

    encoder1: layers.Conv2D
    encoder2: layers.MaxPool2D
    encoder3: layers.Conv2D
    encoder4: layers.MaxPool2D
    encoder5: layers.Conv2D
    encoder6: layers.MaxPool2D
    decoder1: layers.Conv2D
    decoder2: layers.UpSampling2D
    decoder3: layers.Conv2D
    decoder4: layers.UpSampling2D
    decoder5: layers.Conv2D
    decoder6: layers.UpSampling2D
    output: layers.Conv2D
    image_size: int = no_derivative()

    def __init__(self, image_size: int = 28, channels: int = 1):
        code = _pooled(_pooled(_pooled(image_size)))
        if 8 * code - 4 == image_size:
            decoder5_padding = "valid"
        elif 8 * code == image_size:
            decoder5_padding = "same"
        else:
            raise ValueError(
                f"Autoencoder2D: cannot reconstruct {image_size}x{image_size} images: the "
                f"encoder shrinks them to {code}x{code} and the decoder grows that to "
                f"{8 * code}x{8 * code} (or {8 * code - 4}x{8 * code - 4}). Use 28 or a "
                "multiple of 8 (pad or resize the images)."
            )

        def conv(n_in, n_out, padding="same", activation=relu):
            return layers.Conv2D(filter_shape=(3, 3, n_in, n_out), padding=padding,
                                 activation=activation)

        def pool():
            return layers.MaxPool2D(pool_size=(2, 2), strides=(2, 2), padding="same")

        self.encoder1, self.encoder2 = conv(channels, 16), pool()
        self.encoder3, self.encoder4 = conv(16, 8), pool()
        self.encoder5, self.encoder6 = conv(8, 8), pool()
        self.decoder1, self.decoder2 = conv(8, 8), layers.UpSampling2D(size=2)
        self.decoder3, self.decoder4 = conv(8, 8), layers.UpSampling2D(size=2)
        self.decoder5, self.decoder6 = conv(8, 16, decoder5_padding), layers.UpSampling2D(size=2)
        self.output = conv(16, channels, activation=sigmoid)
        self.image_size = image_size

    def encode(self, x):
        """The code ``(batch, ceil(h/8), ceil(w/8), 8)`` of images ``(batch, h, w, channels)``."""
        channels = self.encoder1.filter.shape[2]
        check_input_shape(self, x, (None, self.image_size, self.image_size, channels),
                          f"Autoencoder2D(image_size={self.image_size}, channels={channels}) "
                          "takes NHWC images of that size.")
        return x.sequenced(self.encoder1, self.encoder2, self.encoder3, self.encoder4,
                           self.encoder5, self.encoder6)

    def decode(self, code):
        """Images ``(batch, image_size, image_size, channels)`` from a code."""
        return code.sequenced(self.decoder1, self.decoder2, self.decoder3, self.decoder4,
                              self.decoder5, self.decoder6, self.output)

    def __call__(self, x):
        return self.decode(self.encode(x))
