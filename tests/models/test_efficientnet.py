"""s4tf.models.EfficientNet: torchvision's counts and outputs, stochastic depth, training."""

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
from s4tf.models import EfficientNet

TV = torchvision_models()
# One stage of two blocks: an expanding block that narrows 32 -> 16, then a
# residual one whose branch passes stochastic depth (probability 0.1).
SMALL = {"kind": "b0", "classes": 5, "stage_settings": ((6, 3, 1, 32, 16, 2),)}

# torchvision.models.efficientnet_b*(weights=None) trainable counts.
COUNTS = {"b0": 5_288_548, "b1": 7_794_184, "b2": 9_109_994, "b3": 12_233_232,
          "b4": 19_341_616, "b5": 30_389_784, "b6": 43_040_704, "b7": 66_347_960}


def _kinds():
    for kind, count in COUNTS.items():
        big = kind in ("b5", "b6", "b7")  # 30-66 M parameters: seconds to build on naive
        yield pytest.param(kind, count, marks=[pytest.mark.slow] if big else [])


@pytest.mark.parametrize("kind,count", _kinds())
def test_parameter_counts_are_torchvisions(kind, count):
    assert s4tf.parameter_count(EfficientNet(kind=kind)) == count


@pytest.mark.skipif(TV is None, reason="torchvision is not installed")
def test_counts_outputs_and_drop_rates_match_torchvision():
    reference = TV.efficientnet_b0(weights=None)
    model = EfficientNet(kind="b0")
    assert s4tf.parameter_count(model) == trainable_count(reference)
    theirs = [block.stochastic_depth.p for stage in reference.features[1:-1] for block in stage]
    ours = [block.stochastic_depth.probability for stage in model.stages for block in stage]
    assert ours == pytest.approx(theirs)
    images, _ = batch((2, 40, 36, 3), 1)
    got = with_torch_weights(model, reference)(s4tf.Tensor(images)).numpy()
    np.testing.assert_allclose(got, reference_logits(reference, images), atol=2e-5)


@pytest.mark.skipif(TV is None, reason="torchvision is not installed")
@pytest.mark.parametrize("kind", ["b1", "b2", "b3", "b4"])
def test_scaled_kinds_match_torchvision(kind):
    reference = getattr(TV, f"efficientnet_{kind}")(weights=None)
    assert COUNTS[kind] == trainable_count(reference)
    model = EfficientNet(kind=kind)
    assert [len(stage) for stage in model.stages] == [len(stage) for stage in reference.features[1:-1]]
    assert model.dropout.probability == reference.classifier[0].p


def test_stochastic_depth_rises_linearly_to_the_total():
    model = EfficientNet(kind="b0", stochastic_depth=0.2)
    rates = [block.stochastic_depth.probability for stage in model.stages for block in stage]
    assert len(rates) == 16
    np.testing.assert_allclose(rates, [0.2 * i / 16 for i in range(16)])
    assert all(block.stochastic_depth.mode == "row" for stage in model.stages for block in stage)


def test_block_structure():
    model = EfficientNet(kind="b0")
    first, second = model.stages[0][0], model.stages[1][0]
    assert first.expand is None and second.expand.conv.filter.shape == (1, 1, 16, 96)
    # Squeeze to a quarter of the block's input channels (not of the expanded ones).
    assert second.se.fc1.filter.shape == (1, 1, 96, 4) and second.se.activation is s4tf.swish
    assert model.stages[2][0].depthwise.conv.filter.shape == (5, 5, 144, 1)
    assert model.head.conv.filter.shape == (1, 1, 320, 1280)
    assert (model.stem.bn.epsilon, EfficientNet(kind="b5", classes=2).stem.bn.epsilon) == (1e-5, 1e-3)


def test_forward_shape():
    model = EfficientNet(**SMALL)
    out = model(s4tf.random.normal([2, 32, 32, 3], seed=0))
    assert out.shape == (2, 5) and np.isfinite(out.numpy()).all()
    assert EfficientNet(kind="b0", classes=3)(s4tf.zeros([1, 32, 40, 3])).shape == (1, 3)


def test_stochastic_depth_is_identity_in_inference_only():
    s4tf.random.seed(0)
    model = EfficientNet(**SMALL, dropout=0.0)
    x = s4tf.random.normal([8, 32, 32, 3], seed=1)
    np.testing.assert_array_equal(model(x).numpy(), model(x).numpy())
    with s4tf.training():
        s4tf.random.seed(2)
        first = model(x).numpy()
        s4tf.random.seed(3)
        second = model(x).numpy()
    assert not np.allclose(first, second)


def test_batch_norm_statistics_move_only_in_training():
    assert_running_statistics_move_only_in_training(EfficientNet(**SMALL), (2, 32, 32, 3))


def test_summary():
    model = EfficientNet(**SMALL)
    check_summary(model, (1, 32, 32, 3), s4tf.parameter_count(model))


def test_bad_arguments():
    with pytest.raises(ValueError, match="kind must be one of b0, b1, .*got 'b8'"):
        EfficientNet(kind="b8")
    with pytest.raises(ValueError, match="stage_settings must be"):
        EfficientNet(stage_settings=[(1, 3, 1, 32, 16)])


def test_save_load_round_trip(tmp_path):
    check_save_load(EfficientNet(**SMALL), (2, 32, 32, 3), tmp_path / "model.safetensors")


@pytest.mark.slow
def test_gradient_step_naive_and_xla_agree():
    check_gradient_step_agrees(lambda: EfficientNet(**SMALL), (4, 32, 32, 3), 5)
