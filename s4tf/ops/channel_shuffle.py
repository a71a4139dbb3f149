"""Channel shuffle (ShuffleNet): interleave the channels of ``groups`` groups.

A reshape, a transpose and a reshape: a permutation of the channel axis, so
its derivatives are the inverse permutation and come from those primitives'
own rules (no new primitive, nothing for a backend to supply).
"""

from __future__ import annotations

from .shapes import reshape, shape_of, transpose

__all__ = ["channel_shuffle"]


def channel_shuffle(x, groups: int):
    """Interleave the channels of ``groups`` equal groups along the last axis.

    Channel ``g * n + i`` of the input (group ``g``, ``n`` channels per group)
    becomes channel ``i * groups + g`` of the output, as torchvision's
    ``channel_shuffle`` does on the channel axis of NCHW images, here on the
    last axis (NHWC).

    Parameters
    ----------
    x : Tensor
        Channels-last input, rank >= 2; its channel count must divide by ``groups``.
    groups : int
        Number of groups (positive).

    Examples
    --------
    >>> import s4tf
    >>> x = s4tf.reshape(s4tf.arange(6.0), (1, 1, 1, 6))
    >>> s4tf.nn.channel_shuffle(x, groups=2).reshape(6).tolist()
    [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    """
    shape = shape_of(x)
    if not isinstance(groups, int) or groups < 1:
        raise ValueError(f"channel_shuffle: groups must be a positive int, got {groups!r}.")
    if len(shape) < 2 or shape[-1] % groups:
        raise ValueError(
            f"channel_shuffle: expected a channels-last input whose channel count divides by "
            f"groups={groups}, got shape {shape}."
        )
    rank = len(shape)
    grouped = reshape(x, shape[:-1] + (groups, shape[-1] // groups))
    swapped = transpose(grouped, tuple(range(rank - 1)) + (rank, rank - 1))
    return reshape(swapped, shape)
