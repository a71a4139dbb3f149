"""ChannelShuffle and s4tf.nn.channel_shuffle: the permutation, its derivative, errors."""

import numpy as np
import pytest

import s4tf
from s4tf import layers
from s4tf.testing import check_gradients


def _reference(x, groups):
    """Torchvision's NCHW channel_shuffle, applied to NHWC data."""
    nchw = x.transpose(0, 3, 1, 2)
    n, c, h, w = nchw.shape
    shuffled = nchw.reshape(n, groups, c // groups, h, w).transpose(0, 2, 1, 3, 4).reshape(n, c, h, w)
    return shuffled.transpose(0, 2, 3, 1)


@pytest.mark.parametrize("groups", [1, 2, 3, 6])
def test_matches_torchvision_definition(groups):
    x = np.random.default_rng(0).normal(size=(2, 3, 4, 6))
    out = layers.ChannelShuffle(groups=groups)(s4tf.Tensor(x)).numpy()
    np.testing.assert_array_equal(out, _reference(x, groups))


def test_shuffle_by_the_group_size_undoes_it():
    x = s4tf.random.normal([1, 2, 2, 12], seed=1)
    there = s4tf.nn.channel_shuffle(x, groups=3)
    back = s4tf.nn.channel_shuffle(there, groups=4)
    np.testing.assert_array_equal(back.numpy(), x.numpy())
    assert not np.array_equal(there.numpy(), x.numpy())


def test_gradients(backend):
    x = s4tf.random.normal([2, 2, 3, 6], dtype=s4tf.float64, seed=2)
    check_gradients(lambda t: s4tf.nn.channel_shuffle(t, groups=2) * s4tf.arange(6.0).astype(s4tf.float64), x)
    check_gradients(lambda t: layers.ChannelShuffle(groups=3)(t), x)


def test_layer_has_no_parameters():
    layer = layers.ChannelShuffle(groups=2)
    assert s4tf.parameter_count(layer) == 0
    assert layers.ChannelShuffle.TangentVector._s4tf_field_names == ()


def test_errors_name_the_shape_and_groups():
    with pytest.raises(ValueError, match=r"shape \(1, 2, 2, 5\).*groups=2"):
        layers.ChannelShuffle(groups=2)(s4tf.zeros([1, 2, 2, 5]))
    with pytest.raises(ValueError, match="positive int, got 0"):
        layers.ChannelShuffle(groups=0)
    with pytest.raises(ValueError, match=r"ChannelShuffle: expected an input of shape \(\?, \?, \?, \?\)"):
        layers.ChannelShuffle(groups=2)(s4tf.zeros([4, 6]))
    with pytest.raises(ValueError, match=r"channel_shuffle: .*groups=4, got shape \(3, 6\)"):
        s4tf.nn.channel_shuffle(s4tf.zeros([3, 6]), groups=4)
