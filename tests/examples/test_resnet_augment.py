"""examples/resnet_cifar.py --augment: crop-and-flip on training batches, none on validation."""

import numpy as np
from test_examples import load_example


def test_augment_flag_transforms_training_batches_only():
    example = load_example("resnet_cifar")
    plain_args = example.parse_arguments(["--smoke"])
    augmented_args = example.parse_arguments(["--smoke", "--augment"])
    assert example.augmentation(plain_args) is None
    plain, augmented = example.load_data(plain_args), example.load_data(augmented_args)
    assert [type(t).__name__ for t in augmented.training.transform.transforms] == [
        "RandomCrop", "RandomFlip"]
    (a, _), (b, _) = next(iter(plain.training)), next(iter(augmented.training))
    assert a.shape == b.shape and not np.array_equal(a.numpy(), b.numpy())
    (a, _), (b, _) = next(iter(plain.validation)), next(iter(augmented.validation))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
