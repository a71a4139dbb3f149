"""ChannelShuffle: ShuffleNet's interleaving of channel groups, as a layer."""

from __future__ import annotations

from .. import nn
from .._sizes import size
from ..differentiable import no_derivative
from .layer import Layer, check_input_shape

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Layer):
    """Interleaves the channels of ``groups`` equal groups (Zhang et al. 2018, ShuffleNet).

    ``ChannelShuffle(groups)`` applies :func:`s4tf.nn.channel_shuffle` to NHWC
    inputs: channel ``g * n + i`` (group ``g`` of ``n`` channels) moves to
    ``i * groups + g``, so the next grouped convolution sees every group. It
    has no parameters; its derivative is the inverse permutation.

    Examples
    --------
    >>> import s4tf
    >>> shuffle = s4tf.layers.ChannelShuffle(groups=2)
    >>> x = s4tf.reshape(s4tf.arange(4.0), (1, 1, 1, 4))
    >>> shuffle(x).reshape(4).tolist()
    [0.0, 2.0, 1.0, 3.0]
    """

    groups: int = no_derivative()

    def __init__(self, groups: int):
        self.groups = size(groups, "groups", "ChannelShuffle")

    def __call__(self, input):
        check_input_shape(self, input, (None, None, None, None),
                          "Inputs are channels-last images: (batch, height, width, channels).")
        if input.shape[-1] % self.groups:
            raise ValueError(
                f"ChannelShuffle: the channel count of an input of shape {input.shape} does "
                f"not divide by groups={self.groups}; use a channel count that is a multiple "
                "of groups."
            )
        return nn.channel_shuffle(input, self.groups)
