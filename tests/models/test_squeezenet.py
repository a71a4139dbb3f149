"""s4tf.models.SqueezeNet: torchvision's counts, outputs and ceil-mode pooling, training."""

from __future__ import annotations

import numpy as np
import pytest
from image_model_checks import batch, check_gradient_step_agrees, check_save_load, check_summary
from torchvision_reference import (
    reference_logits,
    torchvision_models,
    trainable_count,
    with_torch_weights,
)

import s4tf
from s4tf.models import SqueezeNet
from s4tf.models.squeezenet import CeilMaxPool2D

TV = torchvision_models()


@pytest.mark.parametrize("version,count", [("1.0", 1_248_424), ("1.1", 1_235_496)])
def test_parameter_counts_are_torchvisions(version, count):
    assert s4tf.parameter_count(SqueezeNet(version=version)) == count


@pytest.mark.skipif(TV is None, reason="torchvision is not installed")
@pytest.mark.parametrize("version", ["1.0", "1.1"])
def test_counts_and_outputs_match_torchvision(version):
    reference = getattr(TV, f"squeezenet1_{version[-1]}")(weights=None)
    model = SqueezeNet(version=version)
    assert s4tf.parameter_count(model) == trainable_count(reference)
    images, _ = batch((2, 41, 38, 3), 1)
    got = with_torch_weights(model, reference)(s4tf.Tensor(images)).numpy()
    np.testing.assert_allclose(got, reference_logits(reference, images), atol=2e-5)


@pytest.mark.parametrize("size,pooled", [(109, 54), (54, 27), (27, 13), (13, 6), (6, 3), (3, 1)])
def test_pooling_has_torchs_ceil_mode_sizes(size, pooled):
    # torch.nn.MaxPool2d(3, 2, ceil_mode=True): ceil((size - 3) / 2) + 1.
    assert pooled == -(-(size - 3) // 2) + 1
    assert CeilMaxPool2D()(s4tf.zeros([1, size, size, 2])).shape == (1, pooled, pooled, 2)


def test_pooling_values_are_the_maxima_of_nonnegative_inputs():
    x = np.random.default_rng(0).uniform(0.0, 1.0, size=(1, 6, 6, 1))
    out = CeilMaxPool2D()(s4tf.Tensor(x)).numpy()[0, :, :, 0]
    want = [[x[0, i:i + 3, j:j + 3, 0].max() for j in (0, 2, 4)] for i in (0, 2, 4)]
    np.testing.assert_array_equal(out, want)


def test_shapes_at_32_and_224():
    model = SqueezeNet(version="1.0", classes=5)
    out = model(s4tf.random.normal([2, 32, 32, 3], seed=0))
    assert out.shape == (2, 5) and np.isfinite(out.numpy()).all()
    assert model.features[0].filter.shape == (7, 7, 3, 96)
    assert SqueezeNet(version="1.1", classes=4)(s4tf.zeros([1, 33, 47, 3])).shape == (1, 4)


def test_summary():
    model = SqueezeNet(version="1.1", classes=5)
    check_summary(model, (1, 32, 32, 3), s4tf.parameter_count(model))


def test_bad_version():
    with pytest.raises(ValueError, match="version must be '1.0' or '1.1', got '1.2'"):
        SqueezeNet(version="1.2")


def test_save_load_round_trip(tmp_path):
    check_save_load(SqueezeNet(version="1.1", classes=5), (2, 32, 32, 3), tmp_path / "model.safetensors")


@pytest.mark.slow
def test_gradient_step_naive_and_xla_agree():
    check_gradient_step_agrees(lambda: SqueezeNet(version="1.1", classes=5), (4, 32, 32, 3), 5)
