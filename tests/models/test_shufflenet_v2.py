"""s4tf.models.ShuffleNetV2: torchvision's counts and outputs, shapes, training."""

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
from s4tf.models import ShuffleNetV2

TV = torchvision_models()
SMALL = {"width": 0.5, "classes": 5, "stage_repeats": (1, 2, 1)}

# torchvision.models.shufflenet_v2_x*(weights=None) trainable counts.
COUNTS = {0.5: 1_366_792, 1.0: 2_278_604, 1.5: 3_503_624, 2.0: 7_393_996}


@pytest.mark.parametrize("width,count", COUNTS.items())
def test_parameter_counts_are_torchvisions(width, count):
    assert s4tf.parameter_count(ShuffleNetV2(width=width)) == count


@pytest.mark.skipif(TV is None, reason="torchvision is not installed")
@pytest.mark.parametrize("width", [0.5, 1.0, 1.5, 2.0])
def test_counts_match_torchvision(width):
    name = f"shufflenet_v2_x{str(width).replace('.', '_')}"
    assert COUNTS[width] == trainable_count(getattr(TV, name)(weights=None))


@pytest.mark.skipif(TV is None, reason="torchvision is not installed")
def test_outputs_match_torchvision():
    reference = TV.shufflenet_v2_x0_5(weights=None)
    images, _ = batch((2, 36, 45, 3), 1)
    got = with_torch_weights(ShuffleNetV2(width=0.5), reference)(s4tf.Tensor(images)).numpy()
    np.testing.assert_allclose(got, reference_logits(reference, images), atol=2e-5)


def test_structure():
    model = ShuffleNetV2(width=1.0)
    assert [len(stage) for stage in model.stages] == [4, 8, 4]
    first, second = model.stages[0][:2]
    assert len(first.branch1) == 2 and second.branch1 == []
    assert first.branch2[0].conv.filter.shape == (1, 1, 24, 58)
    assert second.branch2[0].conv.filter.shape == (1, 1, 58, 58)
    assert second.branch2[1].conv.filter.shape == (3, 3, 58, 1) and second.branch2[1].activation is None
    assert model.fc.weight.shape == (1024, 1000)


def test_forward_shape():
    model = ShuffleNetV2(width=0.5, classes=7)
    out = model(s4tf.random.normal([2, 32, 32, 3], seed=0))
    assert out.shape == (2, 7) and np.isfinite(out.numpy()).all()
    assert model(s4tf.zeros([1, 41, 33, 3])).shape == (1, 7)


def test_batch_norm_statistics_move_only_in_training():
    assert_running_statistics_move_only_in_training(ShuffleNetV2(**SMALL), (2, 32, 32, 3))


def test_summary():
    model = ShuffleNetV2(**SMALL)
    check_summary(model, (1, 32, 32, 3), s4tf.parameter_count(model))


def test_bad_arguments():
    with pytest.raises(ValueError, match="width must be one of 0.5, 1.0, 1.5, 2.0, got 0.75"):
        ShuffleNetV2(width=0.75)
    with pytest.raises(ValueError, match=r"stage_repeats must be 3 positive ints, got \(4, 8\)"):
        ShuffleNetV2(stage_repeats=(4, 8))


def test_save_load_round_trip(tmp_path):
    check_save_load(ShuffleNetV2(**SMALL), (2, 32, 32, 3), tmp_path / "model.safetensors")


@pytest.mark.slow
def test_gradient_step_naive_and_xla_agree():
    check_gradient_step_agrees(lambda: ShuffleNetV2(**SMALL), (4, 32, 32, 3), 5)
