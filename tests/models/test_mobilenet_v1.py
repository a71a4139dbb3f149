"""s4tf.models.MobileNetV1: Keras's parameter count and layout, shapes, training."""

from __future__ import annotations

import numpy as np
import pytest
from image_model_checks import (
    check_gradient_step_agrees,
    check_save_load,
    check_summary,
)
from zoo_checks import assert_running_statistics_move_only_in_training

import s4tf
from s4tf.models import MobileNetV1

SMALL = {"width_multiplier": 0.5, "classes": 5, "block_settings": ((32, 1), (64, 2), (64, 1))}


def test_parameter_count_is_keras_trainable_count():
    # keras.applications.MobileNet(): 4,253,864 parameters, 4,231,976 trainable
    # (the 21,888 others are BatchNorm moving statistics, State cells here).
    model = MobileNetV1()
    assert s4tf.parameter_count(model) == 4_231_976
    moving = sum(2 * bn.running_mean.value.size
                 for bn in [model.conv1_bn] + [b for block in model.blocks
                                                 for b in (block.conv_dw_bn, block.conv_pw_bn)])
    assert moving == 21_888


def test_keras_layout():
    model = MobileNetV1(width_multiplier=0.75, classes=10)
    assert model.conv1.filter.shape == (3, 3, 3, 24) and model.conv1.bias is None
    assert len(model.blocks) == 13
    assert model.blocks[1].conv_dw.filter.shape == (3, 3, 48, 1)
    assert model.blocks[1].conv_dw.padding == "valid" and model.blocks[2].conv_dw.padding == "same"
    assert model.conv_preds.filter.shape == (1, 1, 768, 10) and model.conv_preds.bias is not None
    assert (model.conv1_bn.momentum, model.conv1_bn.epsilon) == (0.99, 1e-3)
    assert model.dropout.probability == 1e-3


def test_depth_multiplier_widens_the_depthwise_convolutions():
    model = MobileNetV1(width_multiplier=0.25, depth_multiplier=2, classes=3)
    assert model.blocks[0].conv_dw.filter.shape == (3, 3, 8, 2)
    assert model.blocks[0].conv_pw.filter.shape == (1, 1, 16, 16)
    assert model(s4tf.zeros([1, 32, 32, 3])).shape == (1, 3)


def test_forward_shape():
    model = MobileNetV1(width_multiplier=0.25, classes=7)
    out = model(s4tf.random.normal([2, 32, 32, 3], seed=0))
    assert out.shape == (2, 7) and np.isfinite(out.numpy()).all()
    assert model(s4tf.zeros([1, 50, 36, 3])).shape == (1, 7)


def test_batch_norm_statistics_move_only_in_training():
    assert_running_statistics_move_only_in_training(MobileNetV1(**SMALL), (2, 32, 32, 3))


def test_summary():
    model = MobileNetV1(**SMALL)
    check_summary(model, (1, 32, 32, 3), s4tf.parameter_count(model))


def test_bad_arguments():
    with pytest.raises(ValueError, match="width_multiplier must be positive"):
        MobileNetV1(width_multiplier=-1.0)
    with pytest.raises(ValueError, match="depth_multiplier must be a positive int, got 0"):
        MobileNetV1(depth_multiplier=0)


def test_save_load_round_trip(tmp_path):
    check_save_load(MobileNetV1(**SMALL), (2, 32, 32, 3), tmp_path / "model.safetensors")


@pytest.mark.slow
def test_gradient_step_naive_and_xla_agree():
    check_gradient_step_agrees(lambda: MobileNetV1(**SMALL), (4, 32, 32, 3), 5)
