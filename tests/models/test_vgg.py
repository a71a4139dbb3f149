"""s4tf.models.VGG: torchvision's vgg11/13/16/19 (adaptive 7x7 pooling before the classifier)."""

from __future__ import annotations

import pytest
from zoo_checks import (
    assert_training_step_agrees_on_naive_and_xla,
    import_torchvision,
    summary_rows,
    torch_parameter_count,
)

import s4tf
from s4tf import layers
from s4tf.models import VGG

COUNTS = {11: 132_863_336, 13: 133_047_848, 16: 138_357_544, 19: 143_667_240}


# Each builds 0.5 GB of float32 weights on the naive backend: built, counted, dropped.
@pytest.mark.slow
@pytest.mark.parametrize("depth", [16, 19])
def test_parameter_counts_are_torchvisions(depth):
    assert s4tf.parameter_count(VGG(depth=depth)) == COUNTS[depth]


@pytest.mark.slow
def test_counts_match_torchvision_when_installed():
    _, torchvision = import_torchvision()
    for depth in (16, 19):
        assert torch_parameter_count(getattr(torchvision.models, f"vgg{depth}")()) == COUNTS[depth]


@pytest.mark.parametrize("depth, convolutions", [(11, 8), (13, 10), (16, 13), (19, 16)])
def test_layouts(depth, convolutions):
    model = VGG(depth=depth, width=1, hidden=4, classes=3)
    convs = [layer for layer in model.features if isinstance(layer, layers.Conv2D)]
    pools = [layer for layer in model.features if isinstance(layer, layers.MaxPool2D)]
    assert len(convs) == convolutions and len(pools) == 5
    assert convs[-1].filter.shape == (3, 3, 8, 8) and model.fc1.weight.shape == (7 * 7 * 8, 4)
    # The count of the full-width model, from the layout: convolutions + 3 dense layers.
    widths = [3] + [64 * (2 ** min(i, 3)) for i, n in enumerate(
        {11: (1, 1, 2, 2, 2), 13: (2, 2, 2, 2, 2), 16: (2, 2, 3, 3, 3), 19: (2, 2, 4, 4, 4)}[depth])
        for _ in range(n)]
    conv_count = sum(9 * a * b + b for a, b in zip(widths[:-1], widths[1:], strict=True))
    dense_count = (25088 * 4096 + 4096) + (4096 * 4096 + 4096) + (4096 * 1000 + 1000)
    assert conv_count + dense_count == COUNTS[depth]


@pytest.mark.parametrize("spatial", [32, 45, 64])
def test_any_input_of_at_least_32_pixels(spatial):
    model = VGG(depth=11, width=2, hidden=8, classes=5)
    assert model(s4tf.random.normal([2, spatial, spatial, 3], seed=0)).shape == (2, 5)
    rows = {row.split()[0]: row for row in summary_rows(model, (1, spatial, spatial, 3))}
    assert "(1, 7, 7, 16)" in rows["avgpool"]


def test_invalid_depth_names_the_valid_ones():
    with pytest.raises(ValueError, match=r"VGG: depth=15 .*11, 13, 16, 19"):
        VGG(depth=15)


def test_dropout_only_in_training():
    model = VGG(depth=11, width=1, hidden=16, classes=3, dropout=0.5)
    x = s4tf.random.normal([2, 32, 32, 3], seed=1)
    assert (model(x) - model(x)).abs().max().item() == 0.0


def test_training_step_agrees_on_naive_and_xla():
    s4tf.random.seed(0)
    model = VGG(depth=11, width=1, hidden=8, classes=5, dropout=0.0)
    assert_training_step_agrees_on_naive_and_xla(model, (2, 32, 32, 3), classes=5)


def test_summary_rows_are_the_direct_children():
    rows = summary_rows(VGG(depth=11, width=1, hidden=4, classes=3), (1, 32, 32, 3))
    names = [row.split()[0] for row in rows]
    assert names == [f"features[{i}]" for i in range(13)] + [
        "avgpool", "flatten", "fc1", "dropout1", "fc2", "dropout2", "fc3"]
