"""s4tf.models.MobileNetV2: torchvision's parameter count and outputs, shapes, training."""

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
from s4tf.models import MobileNetV2

TV = torchvision_models()
SMALL = {"width_multiplier": 0.5, "classes": 5,
         "block_settings": ((1, 16, 1, 1), (6, 24, 2, 2))}  # no expansion; stride 2; residual


def test_parameter_count_is_torchvisions():
    assert s4tf.parameter_count(MobileNetV2()) == 3_504_872


@pytest.mark.parametrize("width,count", [(0.35, 1_677_128), (0.5, 1_968_680), (0.75, 2_636_424),
                                         (1.4, 6_108_776)])
def test_width_multipliers_round_channels_as_torchvision(width, count):
    # torchvision.models.mobilenet_v2(width_mult=width) counts.
    assert s4tf.parameter_count(MobileNetV2(width_multiplier=width)) == count


@pytest.mark.skipif(TV is None, reason="torchvision is not installed")
@pytest.mark.parametrize("width", [1.0, 0.35])
def test_counts_and_outputs_match_torchvision(width):
    reference = TV.mobilenet_v2(weights=None, width_mult=width)
    model = MobileNetV2(width_multiplier=width)
    assert s4tf.parameter_count(model) == trainable_count(reference)
    images, _ = batch((2, 48, 40, 3), 1)
    got = with_torch_weights(model, reference)(s4tf.Tensor(images)).numpy()
    np.testing.assert_allclose(got, reference_logits(reference, images), atol=2e-5)


def test_structure_follows_the_paper():
    model = MobileNetV2()
    assert len(model.blocks) == 17 and model.blocks[0].expand is None
    assert model.blocks[1].expand.conv.filter.shape == (1, 1, 16, 96)
    assert model.blocks[1].depthwise.conv.filter.shape == (3, 3, 96, 1)
    assert [b.residual for b in model.blocks[:4]] == [False, False, True, False]
    assert (model.stem.bn.epsilon, model.stem.bn.momentum) == (1e-5, 0.9)


def test_forward_shape():
    model = MobileNetV2(width_multiplier=0.25, classes=7)
    out = model(s4tf.random.normal([2, 32, 32, 3], seed=0))
    assert out.shape == (2, 7) and np.isfinite(out.numpy()).all()
    assert model(s4tf.zeros([1, 45, 37, 3])).shape == (1, 7)


def test_batch_norm_statistics_move_only_in_training():
    assert_running_statistics_move_only_in_training(MobileNetV2(**SMALL), (2, 32, 32, 3))


def test_summary():
    model = MobileNetV2(**SMALL)
    check_summary(model, (1, 32, 32, 3), s4tf.parameter_count(model))


def test_bad_arguments():
    with pytest.raises(ValueError, match="width_multiplier must be positive, got 0"):
        MobileNetV2(width_multiplier=0)
    with pytest.raises(ValueError, match=r"block_settings must be .*\(expansion, channels, repeats, stride\)"):
        MobileNetV2(block_settings=[(6, 24, 2)])


def test_save_load_round_trip(tmp_path):
    check_save_load(MobileNetV2(**SMALL), (2, 32, 32, 3), tmp_path / "model.safetensors")


@pytest.mark.slow
def test_gradient_step_naive_and_xla_agree():
    check_gradient_step_agrees(lambda: MobileNetV2(**SMALL), (4, 32, 32, 3), 5)
