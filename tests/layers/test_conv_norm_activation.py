"""Conv2DNormActivation: torchvision's symmetric padding, parts, gradients, errors."""

import numpy as np
import pytest

import s4tf
from s4tf import layers
from s4tf.testing import check_gradients

F64 = s4tf.float64


def _ones_block(strides):
    block = layers.Conv2DNormActivation(1, 1, kernel_size=3, strides=strides, activation=None,
                                        dtype=F64)
    return s4tf.replace(block, conv=s4tf.replace(block.conv, filter=s4tf.ones([3, 3, 1, 1],
                                                                               dtype=F64)))


def test_stride_two_pads_one_pixel_on_every_side_as_torch():
    # Window sums of a 4x4 image with a 3x3 filter of ones at stride 2: torch's
    # padding of 1 on each side centres the first window on pixel (0, 0); TF's
    # "same" would pad only after the image and centre it on (1, 1).
    image = np.arange(16.0).reshape(1, 4, 4, 1)
    block = _ones_block(strides=2)
    out = block(s4tf.Tensor(image)).numpy()[0, :, :, 0]
    bn = block.bn
    padded = np.pad(image[0, :, :, 0], 1)
    sums = np.array([[padded[i:i + 3, j:j + 3].sum() for j in (0, 2)] for i in (0, 2)])
    want = sums / np.sqrt(bn.running_variance.value.numpy()[0] + bn.epsilon)
    np.testing.assert_allclose(out, want, rtol=1e-12)


def test_stride_one_keeps_the_size():
    block = layers.Conv2DNormActivation(3, 5, kernel_size=5)
    assert block(s4tf.ones([2, 7, 6, 3])).shape == (2, 7, 6, 5)


def test_parts_and_defaults():
    block = layers.Conv2DNormActivation(4, 4, depthwise=True, strides=2, activation=s4tf.relu6)
    assert isinstance(block.conv, layers.DepthwiseConv2D) and block.conv.filter.shape == (3, 3, 4, 1)
    assert block.conv.bias is None and block.padding == 1
    assert (block.bn.momentum, block.bn.epsilon) == (0.9, 1e-5)
    assert s4tf.parameter_count(block) == 3 * 3 * 4 + 2 * 4
    assert block(s4tf.ones([1, 9, 9, 4])).shape == (1, 5, 5, 4)
    assert layers.Conv2DNormActivation.TangentVector._s4tf_field_names == ("conv", "bn")


@pytest.mark.parametrize("depthwise,phase", [(False, "inference"), (True, "training")])
def test_gradients(backend, depthwise, phase):
    s4tf.random.seed(0)
    block = layers.Conv2DNormActivation(3, 3, strides=2, depthwise=depthwise,
                                        activation=s4tf.swish, dtype=F64)
    block = s4tf.replace(block, bn=s4tf.replace(
        block.bn, offset=s4tf.random.normal([3], dtype=F64, seed=1),
        scale=s4tf.random.uniform([3], 0.5, 1.5, dtype=F64, seed=2)))
    x = s4tf.random.normal([2, 4, 4, 3], dtype=F64, seed=3)
    with s4tf.learning_phase(phase):
        check_gradients(lambda m, t: m(t), block, x)


def test_errors():
    with pytest.raises(ValueError, match="kernel_size must be a positive odd int"):
        layers.Conv2DNormActivation(3, 3, kernel_size=2)
    with pytest.raises(ValueError, match="input_channels=3 and output_channels=6"):
        layers.Conv2DNormActivation(3, 6, depthwise=True)
    with pytest.raises(ValueError, match=r"Conv2D: expected an input of shape \(\?, \?, \?, 3\)"):
        layers.Conv2DNormActivation(3, 6)(s4tf.zeros([1, 4, 4, 2]))
