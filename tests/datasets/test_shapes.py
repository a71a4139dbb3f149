"""The Shapes data set: deterministic, balanced, learnable pictures drawn with pillow."""

import numpy as np
import pytest

from s4tf import datasets
from s4tf.datasets.shapes import CLASS_NAMES, draw_shapes


def test_same_seed_same_pictures_and_other_seed_other_pictures():
    first, labels = draw_shapes(16, 16, np.random.default_rng(3))
    again, _ = draw_shapes(16, 16, np.random.default_rng(3))
    other, _ = draw_shapes(16, 16, np.random.default_rng(4))
    assert first.dtype == np.uint8 and first.shape == (16, 16, 16, 3)
    np.testing.assert_array_equal(first, again)
    assert np.abs(first.astype(int) - other).mean() > 10
    np.testing.assert_array_equal(labels, np.arange(16) % len(CLASS_NAMES))


def test_splits_are_balanced_scaled_and_disjoint():
    shapes = datasets.Shapes(batch_size=40, training_size=80, validation_size=40, seed=0,
                             prefetch=False)
    assert shapes.num_classes == 8 and shapes.image_shape == (32, 32, 3)
    images, labels = next(iter(shapes.validation))
    assert images.shape == (40, 32, 32, 3) and labels.dtype.name == "int32"
    values = images.numpy()
    assert 0.0 <= values.min() and values.max() <= 1.0
    np.testing.assert_array_equal(np.bincount(labels.numpy(), minlength=8), [5] * 8)
    train = np.concatenate([b.data.numpy() for b in shapes.training])
    # The validation pictures were drawn from their own stream: none repeats a training one.
    assert min(np.abs(train - v).max() for v in values) > 0.1


def test_each_class_has_its_own_silhouette():
    # The mean foreground mask of many draws differs between classes (a ring is hollow,
    # a circle is not): the labels carry information a model can learn.
    images, labels = draw_shapes(400, 32, np.random.default_rng(0))
    centre_weight = []
    for k in range(len(CLASS_NAMES)):
        grey = images[labels == k].astype(float).mean(axis=-1)
        background = np.median(grey.reshape(len(grey), -1), axis=1)[:, None, None]
        mask = np.abs(grey - background) > 30
        centre_weight.append(mask.mean())
    assert len({round(w, 3) for w in centre_weight}) == len(CLASS_NAMES)
    ring, circle = centre_weight[CLASS_NAMES.index("ring")], centre_weight[0]
    assert ring < 0.75 * circle


@pytest.mark.parametrize("bad", [{"image_size": 4}, {"training_size": 0},
                                 {"validation_size": 2.5}, {"image_size": True}])
def test_bad_sizes_are_refused_with_the_argument_named(bad):
    name = next(iter(bad))
    with pytest.raises(ValueError, match=name):
        datasets.Shapes(**bad)
