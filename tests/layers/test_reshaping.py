"""Flatten, Reshape, ZeroPadding*, UpSampling*."""

import numpy as np
import pytest

import s4tf
from s4tf import layers
from s4tf.testing import check_gradients


def test_flatten_and_reshape():
    x = s4tf.random.normal([2, 3, 4], dtype=s4tf.float64, seed=0)
    assert layers.Flatten()(x).shape == (2, 12)
    assert layers.Reshape((-1, 4, 3))(x).shape == (2, 4, 3)
    check_gradients(lambda x: layers.Flatten()(x), x)
    with pytest.raises(ValueError, match=r"cannot reshape an input of shape \(2, 3, 4\) \(24 values\) to \(5, -1\)"):
        layers.Reshape((5, -1))(x)
    with pytest.raises(ValueError, match="at most one -1"):
        layers.Reshape((-1, -1))


def test_zero_padding_and_upsampling():
    x = s4tf.random.normal([1, 2, 3, 1], dtype=s4tf.float64, seed=1)
    padded = layers.ZeroPadding2D(padding=((1, 0), (0, 2)))(x).numpy()
    np.testing.assert_array_equal(padded, np.pad(x.numpy(), ((0, 0), (1, 0), (0, 2), (0, 0))))
    up = layers.UpSampling2D(size=2)(x).numpy()
    np.testing.assert_array_equal(up, x.numpy().repeat(2, 1).repeat(2, 2))
    assert layers.ZeroPadding1D(padding=(1, 2))(s4tf.ones([1, 4, 3])).shape == (1, 7, 3)
    assert layers.UpSampling3D(size=(1, 2, 3))(s4tf.ones([1, 2, 2, 2, 1])).shape == (1, 2, 4, 6, 1)
    check_gradients(lambda x: layers.UpSampling2D(size=2)(x), x)
    with pytest.raises(ValueError, match="ZeroPadding2D: padding must be"):
        layers.ZeroPadding2D(padding=(1, 2, 3))
    with pytest.raises(ValueError, match="size must be a positive int or 1 positive ints"):
        layers.UpSampling1D(size=0)
