"""s4tf.models.WideResNet (Zagoruyko and Komodakis 2016)."""

from __future__ import annotations

import pytest
from zoo_checks import (
    assert_running_statistics_move_only_in_training,
    assert_training_step_agrees_on_naive_and_xla,
    summary_rows,
)

import s4tf
from s4tf.models import WideResNet


@pytest.mark.parametrize("depth, width, count", [
    pytest.param(28, 10, 36_479_194, marks=pytest.mark.slow), (16, 8, 10_961_370),
    (40, 2, 2_243_546),
])
def test_parameter_counts_are_the_papers(depth, width, count):
    assert s4tf.parameter_count(WideResNet(depth=depth, width=width, classes=10)) == count


def test_default_is_wrn_28_10_layout():
    model = WideResNet(depth=28, width=1)  # WRN-28-10's layout at width 1, cheap to build
    assert len(model.blocks) == 12 and model.fc.weight.shape == (64, 10)
    # A projection where the width changes; at width 1 the first stage keeps 16 channels.
    assert [b.shortcut is not None for b in model.blocks[::4]] == [False, True, True]
    wide = WideResNet(depth=10, width=4)
    assert wide.blocks[0].shortcut.filter.shape == (1, 1, 16, 64)


def test_dropout_sits_between_the_convolutions_and_is_off_in_inference():
    model = WideResNet(depth=10, width=1, dropout=0.3)
    assert model.blocks[0].dropout.probability == 0.3
    x = s4tf.random.normal([2, 32, 32, 3], seed=0)
    assert (model(x) - model(x)).abs().max().item() == 0.0
    assert WideResNet(depth=10, width=1).blocks[0].dropout is None


def test_forward_shape_on_a_small_input():
    assert WideResNet(depth=10, width=2, classes=7)(s4tf.zeros([2, 32, 32, 3])).shape == (2, 7)


def test_invalid_configurations_are_explained():
    with pytest.raises(ValueError, match=r"depth=27 .*6n\+4.*10, 16, 22, 28, 40"):
        WideResNet(depth=27)
    with pytest.raises(ValueError, match=r"width .* int >= 1; received width=0"):
        WideResNet(width=0)


def test_training_step_agrees_on_naive_and_xla():
    s4tf.random.seed(0)
    model = WideResNet(depth=10, width=1, classes=5)
    assert_training_step_agrees_on_naive_and_xla(model, (2, 16, 16, 3), classes=5)


def test_running_statistics_move_only_in_training():
    s4tf.random.seed(1)
    assert_running_statistics_move_only_in_training(WideResNet(depth=10, width=1), (2, 32, 32, 3))


def test_summary_rows_are_the_direct_children():
    rows = summary_rows(WideResNet(depth=10, width=1), (1, 32, 32, 3))
    assert [row.split()[0] for row in rows] == ["conv1", "blocks[0]", "blocks[1]", "blocks[2]",
                                                "bn", "pool", "fc"]
