"""s4tf.models.ResNetV2: pre-activation ResNets (He et al., ECCV 2016), counts derived by hand."""

from __future__ import annotations

import pytest
from zoo_checks import (
    assert_running_statistics_move_only_in_training,
    assert_training_step_agrees_on_naive_and_xla,
    summary_rows,
)

import s4tf
from s4tf import layers
from s4tf.models import ResNetV2
from s4tf.models.resnet_v2 import PreActBasicBlock, PreActBottleneck


def hand_count(depth: int, stem: str, classes: int) -> int:
    """The parameter count, from the architecture's description alone.

    Conv k x k, in -> out, no bias: k*k*in*out. BatchNorm over c: 2c.
    Basic block (in -> w): BN(in), conv3x3 in->w, BN(w), conv3x3 w->w, plus a
    1x1 in->w projection when in != w or strided. Bottleneck (in -> 4w):
    BN(in), conv1x1 in->w, BN(w), conv3x3 w->w, BN(w), conv1x1 w->4w, plus a
    1x1 in->4w projection when the shape changes. Stem: one convolution
    (3x3 3->16 for CIFAR, 7x7 3->64 for ImageNet); head: BN(features) and a
    dense layer features*classes + classes.
    """
    imagenet = stem == "imagenet"
    plans = {18: ("basic", (2, 2, 2, 2)), 34: ("basic", (3, 4, 6, 3)),
             50: ("bottleneck", (3, 4, 6, 3)), 101: ("bottleneck", (3, 4, 23, 3)),
             152: ("bottleneck", (3, 8, 36, 3))}
    kind, plan = plans[depth] if imagenet else ("basic", ((depth - 2) // 6,) * 3)
    width = 64 if imagenet else 16
    total = (7 * 7 * 3 * 64) if imagenet else (3 * 3 * 3 * 16)
    channels = width
    for stage, count in enumerate(plan):
        w = width * 2 ** stage
        for i in range(count):
            strided = stage > 0 and i == 0
            if kind == "basic":
                total += 2 * channels + 9 * channels * w + 2 * w + 9 * w * w
                out = w
            else:
                out = 4 * w
                total += 2 * channels + channels * w + 2 * w + 9 * w * w + 2 * w + w * out
            if strided or channels != out:
                total += channels * out
            channels = out
    return total + 2 * channels + channels * classes + classes


# By hand for ResNetV2-20 (CIFAR): stem 432; stage 1: 3 x (32 + 2304 + 32 + 2304) = 14,016;
# stage 2: (32 + 4608 + 64 + 9216 + 512) + 2 x (64 + 9216 + 64 + 9216) = 51,552; stage 3:
# (64 + 18432 + 128 + 36864 + 2048) + 2 x (128 + 36864 + 128 + 36864) = 205,504; head
# 128 + 650. Total 272,282.
COUNTS = {("cifar", 20): 272_282, ("cifar", 56): 855_578, ("cifar", 110): 1_730_522,
          ("imagenet", 18): 11_687_720, ("imagenet", 34): 21_795_880,
          ("imagenet", 50): 25_549_352, ("imagenet", 101): 44_541_480,
          ("imagenet", 152): 60_185_128}


def test_hand_derivation_matches_the_worked_example():
    assert hand_count(20, "cifar", 10) == 432 + 14_016 + 51_552 + 205_504 + 128 + 650 == 272_282


@pytest.mark.parametrize("stem, depth", [
    ("cifar", 20), ("cifar", 56), ("cifar", 110), ("imagenet", 18), ("imagenet", 50),
    pytest.param("imagenet", 34, marks=pytest.mark.slow),
    pytest.param("imagenet", 101, marks=pytest.mark.slow),
    pytest.param("imagenet", 152, marks=pytest.mark.slow),
])
def test_parameter_counts_match_the_hand_derivation(stem, depth):
    classes = 10 if stem == "cifar" else 1000
    count = s4tf.parameter_count(ResNetV2(depth=depth, classes=classes, stem=stem))
    assert count == hand_count(depth, stem, classes) == COUNTS[stem, depth]


def test_blocks_are_pre_activated_with_plain_convolution_shortcuts():
    model = ResNetV2(depth=50, width=4, classes=3)
    assert all(isinstance(b, PreActBottleneck) for b in model.blocks)
    assert model.blocks[3].conv2.strides == (2, 2) and model.blocks[3].shortcut.strides == (2, 2)
    assert isinstance(model.blocks[3].shortcut, layers.Conv2D) and model.blocks[1].shortcut is None
    cifar = ResNetV2(depth=8, classes=10, stem="cifar")
    assert all(isinstance(b, PreActBasicBlock) for b in cifar.blocks)
    assert cifar.blocks[0].bn1.offset.shape == (16,) and cifar.bn.offset.shape == (64,)


def test_identity_block_adds_its_input_unchanged():
    # With the residual branch's last convolution at zero, a block is the identity.
    block = PreActBasicBlock(4, 4)
    block = s4tf.replace(block, conv2=s4tf.replace(block.conv2, filter=s4tf.zeros([3, 3, 4, 4])))
    x = s4tf.random.normal([2, 5, 5, 4], seed=0)
    assert (block(x) - x).abs().max().item() == 0.0


@pytest.mark.parametrize("depth, stem, spatial", [(18, "imagenet", 32), (50, "imagenet", 33),
                                                  (8, "cifar", 32)])
def test_forward_shapes_on_small_inputs(depth, stem, spatial):
    model = ResNetV2(depth=depth, stem=stem, width=4, classes=7)
    assert model(s4tf.random.normal([2, spatial, spatial, 3], seed=0)).shape == (2, 7)


def test_invalid_depths_name_the_valid_ones():
    with pytest.raises(ValueError, match=r"ResNetV2: depth=200 .*18, 34, 50, 101, 152"):
        ResNetV2(depth=200)
    with pytest.raises(ValueError, match=r"ResNetV2: depth=9 .*6n\+2"):
        ResNetV2(depth=9, stem="cifar")


def test_training_step_agrees_on_naive_and_xla():
    s4tf.random.seed(0)
    model = ResNetV2(depth=8, stem="cifar", width=2, classes=5)
    assert_training_step_agrees_on_naive_and_xla(model, (2, 16, 16, 3), classes=5)


def test_bottleneck_training_step_agrees_on_naive_and_xla():
    s4tf.random.seed(0)
    model = layers.Sequential(PreActBottleneck(3, 2, strides=2), layers.GlobalAvgPool2D(),
                              layers.Dense(8, 5))
    assert_training_step_agrees_on_naive_and_xla(model, (4, 9, 9, 3), classes=5)


def test_running_statistics_move_only_in_training():
    s4tf.random.seed(1)
    assert_running_statistics_move_only_in_training(ResNetV2(depth=8, stem="cifar", width=2),
                                                    (2, 32, 32, 3))


def test_summary_rows_are_the_direct_children():
    rows = summary_rows(ResNetV2(depth=8, stem="cifar", width=2, classes=3), (1, 32, 32, 3))
    assert [row.split()[0] for row in rows] == ["conv1", "blocks[0]", "blocks[1]", "blocks[2]",
                                                "bn", "pool", "fc"]
