"""s4tf.models.LeNet: shapes, parameter count, and a save/load round trip."""

from __future__ import annotations

import numpy as np
import pytest

import s4tf
from s4tf.models import LeNet


def test_lenet_for_28x28_matches_the_paper():
    s4tf.random.seed(0)
    model = LeNet()
    assert model.conv1.filter.shape == (5, 5, 1, 6)
    assert model.conv2.filter.shape == (5, 5, 6, 16)
    assert model.fc1.weight.shape == (400, 120)
    assert model.fc3.weight.shape == (84, 10)
    out = model(s4tf.random.normal([3, 28, 28, 1]))
    assert out.shape == (3, 10) and np.isfinite(out.numpy()).all()
    # LeNet-5's classic count: 61,706 parameters.
    total = sum(leaf.size for leaf in s4tf.tree_leaves(model, differentiable=True))
    assert total == 61_706


def test_lenet_for_digits_takes_8x8_images():
    model = LeNet.for_digits()
    assert model.fc1.weight.shape == (2 * 2 * 16, 120)
    assert model(s4tf.zeros([5, 8, 8, 1])).shape == (5, 10)


def test_lenet_rejects_images_too_small():
    with pytest.raises(ValueError, match="too small"):
        LeNet(image_size=8)


def test_lenet_gradient_reaches_every_parameter():
    s4tf.random.seed(1)
    model = LeNet.for_digits()
    x = s4tf.random.uniform([4, 8, 8, 1])
    labels = s4tf.Tensor([0, 1, 2, 3])
    grads = s4tf.gradient(model, of=lambda m: s4tf.softmax_cross_entropy(logits=m(x),
                                                                          labels=labels))
    for name in ("conv1", "conv2", "fc1", "fc2", "fc3"):
        layer_grad = getattr(grads, name)
        for leaf in s4tf.tree_leaves(layer_grad):
            assert np.abs(leaf.numpy()).sum() > 0, name


def test_lenet_save_load_round_trip_without_like(tmp_path):
    s4tf.random.seed(2)
    model = LeNet.for_digits()
    s4tf.save(model, tmp_path / "lenet.safetensors")
    loaded = s4tf.load(tmp_path / "lenet.safetensors")
    assert type(loaded) is LeNet and loaded.conv1.activation is model.conv1.activation
    x = s4tf.random.uniform([2, 8, 8, 1])
    np.testing.assert_array_equal(loaded(x).numpy(), model(x).numpy())
