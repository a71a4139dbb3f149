import numpy as np

import s4tf
from s4tf.datasets import Digits, LabeledBatch


def stacked(batches):
    parts = list(batches._numpy_batches())
    return np.concatenate([d for d, _ in parts]), np.concatenate([l for _, l in parts])


def test_digits_holds_the_1797_uci_examples_in_10_classes():
    digits = Digits(batch_size=256, seed=0)
    train_images, train_labels = stacked(digits.training)
    val_images, val_labels = stacked(digits.validation)
    assert len(train_images) + len(val_images) == 1797
    assert (len(train_images), len(val_images)) == (1437, 360)
    assert digits.num_classes == 10 and digits.class_names[7] == "7"
    labels = np.concatenate([train_labels, val_labels])
    # The class sizes of the UCI optical-digits test set.
    assert np.bincount(labels).tolist() == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
    assert np.bincount(val_labels, minlength=10).min() >= 30


def test_digits_images_are_nhwc_float32_in_the_unit_interval():
    digits = Digits(batch_size=100)
    images, labels = stacked(digits.validation)
    assert images.shape == (360, 8, 8, 1) and images.dtype == np.float32
    assert labels.dtype == np.int32
    assert images.min() == 0.0 and images.max() == 1.0
    # Pixels were counts 0..16 before scaling.
    np.testing.assert_allclose(images * 16, np.round(images * 16), atol=1e-5)


def test_the_split_is_fixed_and_training_reshuffles():
    a, b = Digits(batch_size=64, seed=1), Digits(batch_size=64, seed=2)
    np.testing.assert_array_equal(stacked(a.validation)[0], stacked(b.validation)[0])
    first, second = stacked(a.training)[0], stacked(a.training)[0]
    assert not np.array_equal(first, second)
    # Same examples, new order: the multiset of images is unchanged.
    key = lambda images: np.sort(images.reshape(len(images), -1) @ np.arange(64.0))
    np.testing.assert_allclose(key(first), key(second))


# The first example of the UCI file (a zero), as 0..16 counts.
FIRST_ZERO = np.array([
    [0, 0, 5, 13, 9, 1, 0, 0], [0, 0, 13, 15, 10, 15, 5, 0], [0, 3, 15, 2, 0, 11, 8, 0],
    [0, 4, 12, 0, 0, 8, 8, 0], [0, 5, 8, 0, 0, 9, 8, 0], [0, 4, 11, 0, 1, 12, 7, 0],
    [0, 2, 14, 5, 10, 12, 0, 0], [0, 0, 6, 13, 10, 0, 0, 0],
])


def test_validation_is_the_last_360_examples_in_file_order():
    digits = Digits(batch_size=12)
    _, labels = next(digits.validation._numpy_batches())
    assert labels.tolist() == [2, 3, 4, 5, 6, 7, 8, 9, 0, 9, 5, 5]


def test_training_holds_the_first_example_of_the_file_with_its_label():
    digits = Digits(batch_size=1437, seed=4)
    images, labels = stacked(digits.training)
    matches = np.flatnonzero((np.abs(images[..., 0] - FIRST_ZERO / 16) < 1e-6).all(axis=(1, 2)))
    assert len(matches) == 1 and labels[matches[0]] == 0


def test_normalize_true_standardises_the_training_split():
    digits = Digits(batch_size=500, normalize=True)
    images, _ = stacked(digits.training)
    assert abs(images.mean()) < 1e-4 and abs(images.std() - 1) < 1e-4


def test_drop_remainder_keeps_training_batches_full():
    digits = Digits(batch_size=100, drop_remainder=True)
    assert len(digits.training) == 14 and len(digits.validation) == 4
    sizes = [len(labels) for _, labels in digits.training._numpy_batches()]
    assert sizes == [100] * 14


def test_digits_batches_are_s4tf_tensors():
    digits = Digits(batch_size=32, seed=0)
    batch = next(iter(digits.training))
    assert isinstance(batch, LabeledBatch)
    images, labels = batch
    assert isinstance(images, s4tf.Tensor) and images.shape == (32, 8, 8, 1)
    assert images.dtype == s4tf.float32 and labels.dtype == s4tf.int32
    assert 0 <= int(labels.numpy().min()) and int(labels.numpy().max()) <= 9
    total = sum(labels.shape[0] for _, labels in digits.validation)
    assert total == 360
