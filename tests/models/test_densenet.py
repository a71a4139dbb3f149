"""s4tf.models.DenseNet and DenseNet121 (torchvision's densenet121)."""

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
from s4tf.models import DenseNet, DenseNet121


def small(**options):
    return DenseNet(block_sizes=(2, 2), growth_rate=4, initial_features=8, bottleneck_size=2,
                    **options)


def test_densenet121_has_torchvisions_parameter_count():
    model = DenseNet121()
    assert s4tf.parameter_count(model) == 7_978_856
    assert [len(b.layers) for b in model.dense_blocks] == [6, 12, 24, 16]
    assert model.classifier.weight.shape == (1024, 1000)


def test_count_matches_torchvision_when_installed():
    _, torchvision = import_torchvision()
    assert torch_parameter_count(torchvision.models.densenet121()) == 7_978_856


def test_channels_grow_by_the_growth_rate_and_transitions_halve_them():
    model = small(classes=3)
    rows = {row.split()[0]: row for row in summary_rows(model, (1, 32, 32, 3))}
    # 8 + 2 * 4 = 16 -> transition 8 (and 8x8 -> 4x4) -> 8 + 2 * 4 = 16.
    assert "(1, 8, 8, 16)" in rows["dense_blocks[0]"]
    assert "(1, 4, 4, 8)" in rows["transitions[0]"]
    assert "(1, 4, 4, 16)" in rows["dense_blocks[1]"]
    assert model(s4tf.zeros([2, 32, 32, 3])).shape == (2, 3)


def test_invalid_block_sizes_are_explained():
    with pytest.raises(ValueError, match=r"block_sizes must be one or more ints >= 1"):
        DenseNet(block_sizes=(2, 0))


def test_training_step_agrees_on_naive_and_xla():
    s4tf.random.seed(0)
    model = DenseNet(block_sizes=(1, 1), growth_rate=4, initial_features=8, bottleneck_size=2,
                     classes=5)
    assert_training_step_agrees_on_naive_and_xla(model, (2, 16, 16, 3), classes=5)


def test_running_statistics_move_only_in_training():
    s4tf.random.seed(1)
    assert_running_statistics_move_only_in_training(small(classes=3), (2, 32, 32, 3))


def test_summary_collapses_dense_blocks():
    rows = summary_rows(DenseNet121(), (1, 32, 32, 3))
    assert len(rows) == 13  # conv0, norm0, pool0, 4 dense blocks, 3 transitions, norm5, pool, fc
    assert rows[3].split()[0] == "dense_blocks[0]" and "(DenseBlock)" in rows[3]


def test_checkpoint_round_trip_rebuilds_the_model(tmp_path):
    s4tf.random.seed(2)
    model = small(classes=3)
    s4tf.save(model, tmp_path / "densenet.safetensors")
    loaded = s4tf.load(tmp_path / "densenet.safetensors")
    assert type(loaded) is DenseNet and len(loaded.transitions) == 1
    x = s4tf.random.normal([1, 32, 32, 3], seed=0)
    assert (loaded(x) - model(x)).abs().max().item() == 0.0
