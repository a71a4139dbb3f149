"""s4tf.models.MobileNetV3: torchvision's parameter counts and outputs, shapes, training."""

from __future__ import annotations

import numpy as np
import pytest
from image_model_checks import (
    batch,
    check_gradient_step_agrees,
    check_save_load,
    check_summary,
)
from torchvision_reference import (
    reference_logits,
    torchvision_models,
    trainable_count,
    with_torch_weights,
)
from zoo_checks import assert_running_statistics_move_only_in_training

import s4tf
from s4tf import layers
from s4tf.models import MobileNetV3

TV = torchvision_models()
# Two blocks: squeeze-excitation with ReLU and no expansion at stride 2, then
# an expanding 5x5 hard-swish residual block with squeeze-excitation.
SMALL = {"size": "small", "width_multiplier": 0.5, "classes": 5,
         "block_settings": ((16, 3, 16, 16, True, False, 2), (16, 5, 48, 16, True, True, 1))}


@pytest.mark.parametrize("size,width,count", [
    ("large", 1.0, 5_483_032), ("small", 1.0, 2_542_856),
    # torchvision.models.mobilenet_v3_*(width_mult=width) counts.
    ("large", 0.75, 3_377_576), ("small", 0.5, 917_264),
])
def test_parameter_counts_are_torchvisions(size, width, count):
    assert s4tf.parameter_count(MobileNetV3(size=size, width_multiplier=width)) == count


@pytest.mark.skipif(TV is None, reason="torchvision is not installed")
@pytest.mark.parametrize("size", ["large", "small"])
def test_counts_and_outputs_match_torchvision(size):
    reference = getattr(TV, f"mobilenet_v3_{size}")(weights=None)
    model = MobileNetV3(size=size)
    assert s4tf.parameter_count(model) == trainable_count(reference)
    images, _ = batch((2, 40, 48, 3), 1)
    got = with_torch_weights(model, reference)(s4tf.Tensor(images)).numpy()
    np.testing.assert_allclose(got, reference_logits(reference, images), atol=2e-5)


def test_blocks_follow_the_paper():
    model = MobileNetV3(size="large")
    assert len(model.blocks) == 15 and model.blocks[0].expand is None
    se = model.blocks[3].se
    assert se.fc1.filter.shape == (1, 1, 72, 24) and se.gate is s4tf.hard_sigmoid
    assert model.blocks[3].depthwise.conv.filter.shape == (5, 5, 72, 1)
    assert model.blocks[6].depthwise.activation is s4tf.hard_swish and model.blocks[6].se is None
    assert (model.stem.bn.epsilon, model.stem.bn.momentum) == (1e-3, 0.99)
    assert model.fc1.weight.shape == (960, 1280)


def test_forward_shape():
    model = MobileNetV3(size="small", width_multiplier=0.25, classes=7)
    out = model(s4tf.random.normal([2, 32, 32, 3], seed=0))
    assert out.shape == (2, 7) and np.isfinite(out.numpy()).all()
    assert any(isinstance(b.se, layers.SqueezeExcitation) for b in model.blocks)


def test_batch_norm_statistics_move_only_in_training():
    assert_running_statistics_move_only_in_training(MobileNetV3(**SMALL), (2, 32, 32, 3))


def test_summary():
    model = MobileNetV3(**SMALL)
    check_summary(model, (1, 32, 32, 3), s4tf.parameter_count(model))


def test_bad_arguments():
    with pytest.raises(ValueError, match="size must be 'large' or 'small', got 'medium'"):
        MobileNetV3(size="medium")
    with pytest.raises(ValueError, match="block_settings must be"):
        MobileNetV3(block_settings=[(16, 3, 16, 16)])


def test_save_load_round_trip(tmp_path):
    check_save_load(MobileNetV3(**SMALL), (2, 32, 32, 3), tmp_path / "model.safetensors")


@pytest.mark.slow
def test_gradient_step_naive_and_xla_agree():
    check_gradient_step_agrees(lambda: MobileNetV3(**SMALL), (4, 32, 32, 3), 5)
