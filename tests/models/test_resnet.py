"""s4tf.models.ResNet: torchvision's ImageNet ResNets (v1.5) and the CIFAR ResNets of He et al."""

from __future__ import annotations

import pytest
from zoo_checks import (
    assert_running_statistics_move_only_in_training,
    assert_training_step_agrees_on_naive_and_xla,
    import_torchvision,
    summary_rows,
    torch_parameter_count,
)

import s4tf
from s4tf import layers
from s4tf.models import ResNet
from s4tf.models.resnet import BasicBlock, Bottleneck

IMAGENET_COUNTS = {18: 11_689_512, 34: 21_797_672, 50: 25_557_032, 101: 44_549_160,
                   152: 60_192_808}
CIFAR_COUNTS = {20: 272_474, 56: 855_770, 110: 1_730_714}


@pytest.mark.parametrize("depth", [
    18, 34, 50,
    pytest.param(101, marks=pytest.mark.slow), pytest.param(152, marks=pytest.mark.slow),
])
def test_imagenet_parameter_counts_are_torchvisions(depth):
    assert s4tf.parameter_count(ResNet(depth=depth)) == IMAGENET_COUNTS[depth]


@pytest.mark.parametrize("depth", sorted(CIFAR_COUNTS))
def test_cifar_parameter_counts(depth):
    model = ResNet(depth=depth, classes=10, stem="cifar")
    assert s4tf.parameter_count(model) == CIFAR_COUNTS[depth]
    assert len(model.blocks) == (depth - 2) // 2 and model.maxpool is None


def test_counts_match_torchvision_when_installed():
    _, torchvision = import_torchvision()
    for depth in (18, 50):
        reference = getattr(torchvision.models, f"resnet{depth}")(weights=None)
        assert torch_parameter_count(reference) == IMAGENET_COUNTS[depth]


def test_block_kinds_strides_and_projections():
    model = ResNet(depth=50, width=4, classes=3)
    assert model.stage_sizes == (3, 4, 6, 3) and all(isinstance(b, Bottleneck) for b in model.blocks)
    first_of_stage2 = model.blocks[3]
    # v1.5: the stride is on the 3x3 convolution, not on the first 1x1.
    assert first_of_stage2.conv1.strides == (1, 1) and first_of_stage2.conv2.strides == (2, 2)
    assert first_of_stage2.downsample.conv.strides == (2, 2)
    assert model.blocks[0].downsample is not None  # 4 -> 16 channels at stride 1
    assert model.blocks[1].downsample is None
    cifar = ResNet(depth=8, classes=10, stem="cifar")
    assert all(isinstance(b, BasicBlock) for b in cifar.blocks)
    assert [b.downsample is not None for b in cifar.blocks] == [False, True, True]
    assert all(c.bias is None for c in (cifar.conv1, cifar.blocks[1].conv1,
                                        cifar.blocks[1].downsample.conv))


@pytest.mark.parametrize("depth, stem, spatial, sizes", [
    # (after the stem, after each stage): PyTorch's padding gives ceil(size / 2) per stride.
    (18, "imagenet", 32, (8, 8, 4, 2, 1)),
    (50, "imagenet", 45, (12, 12, 6, 3, 2)),
    (8, "cifar", 32, (32, 32, 16, 8)),
])
def test_forward_shapes_on_small_inputs(depth, stem, spatial, sizes):
    model = ResNet(depth=depth, stem=stem, width=4, classes=7)
    assert model(s4tf.random.normal([2, spatial, spatial, 3], seed=0)).shape == (2, 7)
    shapes = {row.split()[0]: row for row in summary_rows(model, (2, spatial, spatial, 3))}
    stem_row = shapes["maxpool" if stem == "imagenet" else "bn1"]
    last_blocks = [sum(model.stage_sizes[:i + 1]) - 1 for i in range(len(model.stage_sizes))]
    rows = [stem_row] + [shapes[f"blocks[{i}]"] for i in last_blocks]
    widths = [4] + [4 * 2 ** i * (4 if depth == 50 else 1) for i in range(len(last_blocks))]
    for row, size, width in zip(rows, sizes, widths, strict=True):
        assert f"(2, {size}, {size}, {width})" in row, row


def test_invalid_depths_name_the_valid_ones():
    with pytest.raises(ValueError, match=r"depth=51 .*18, 34, 50, 101, 152"):
        ResNet(depth=51)
    with pytest.raises(ValueError, match=r"depth=21 .*6n\+2.*20, 32, 44, 56, 110"):
        ResNet(depth=21, stem="cifar")
    with pytest.raises(ValueError, match=r"depth=18 is not a CIFAR .*stem='imagenet'"):
        ResNet(depth=18, stem="cifar")
    with pytest.raises(ValueError, match="stem must be 'imagenet' or 'cifar'"):
        ResNet(depth=18, stem="mnist")


def test_wrong_input_channels_are_reported():
    with pytest.raises(ValueError, match=r"ResNet: expected an input of shape \(\?, \?, \?, 3\), got shape \(1, 32, 32, 1\)"):
        ResNet(depth=8, stem="cifar", width=4)(s4tf.zeros([1, 32, 32, 1]))


def test_training_step_agrees_on_naive_and_xla():
    s4tf.random.seed(0)
    model = ResNet(depth=8, stem="cifar", width=2, classes=5)
    assert_training_step_agrees_on_naive_and_xla(model, (2, 16, 16, 3), classes=5)


def test_bottleneck_training_step_agrees_on_naive_and_xla():
    s4tf.random.seed(0)
    model = layers.Sequential(Bottleneck(3, 2, strides=2), layers.GlobalAvgPool2D(),
                              layers.Dense(8, 5))
    assert_training_step_agrees_on_naive_and_xla(model, (4, 9, 9, 3), classes=5)


def test_running_statistics_move_only_in_training():
    s4tf.random.seed(1)
    assert_running_statistics_move_only_in_training(ResNet(depth=18, width=2, classes=3),
                                                    (2, 32, 32, 3))


def test_summary_shows_one_row_per_block_and_totals():
    model = ResNet(depth=20, classes=10, stem="cifar")
    rows = summary_rows(model, (1, 32, 32, 3))
    assert [row.split()[0] for row in rows] == (
        ["conv1", "bn1"] + [f"blocks[{i}]" for i in range(9)] + ["pool", "fc"])
    assert "(BasicBlock)" in rows[5] and "(1, 16, 16, 32)" in rows[5]
    assert rows[5].rstrip().endswith("14,528")  # 4,608 + 9,216 + 2 * 64 BN + 512 + 64 projection


def test_checkpoint_round_trip_rebuilds_the_model(tmp_path):
    s4tf.random.seed(2)
    model = ResNet(depth=18, width=2, classes=3)
    s4tf.save(model, tmp_path / "resnet.safetensors")
    loaded = s4tf.load(tmp_path / "resnet.safetensors")
    assert type(loaded) is ResNet and loaded.stage_sizes == (2, 2, 2, 2)
    assert loaded.blocks[2].downsample is not None and loaded.blocks[1].downsample is None
    x = s4tf.random.normal([1, 32, 32, 3], seed=0)
    assert (loaded(x) - model(x)).abs().max().item() == 0.0
