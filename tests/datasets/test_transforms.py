"""s4tf.datasets.transforms: vectorised, seeded augmentation, and where data sets apply it."""

import numpy as np
import pytest
from dataset_files import COLOURS, write_image

from s4tf.datasets import Batches, ImageFolder, Shapes, transforms


def images(n=16, size=8, channels=3, seed=0):
    return np.random.default_rng(seed).random((n, size, size, channels)).astype(np.float32)


def test_random_crop_is_a_per_image_window_of_the_padded_batch():
    x = images(32)
    out = transforms.RandomCrop(8, padding=2)(x, rng=np.random.default_rng(5))
    draw = np.random.default_rng(5)
    top, left = draw.integers(0, 5, 32), draw.integers(0, 5, 32)
    padded = np.pad(x, ((0, 0), (2, 2), (2, 2), (0, 0)))
    expected = np.stack([padded[i, top[i]:top[i] + 8, left[i]:left[i] + 8] for i in range(32)])
    np.testing.assert_array_equal(out, expected)
    assert len({(t, l) for t, l in zip(top, left, strict=True)}) > 1  # not one window for all


def test_random_flip_mirrors_the_chosen_images_and_never_writes_the_input():
    x = images(64)
    before = x.copy()
    out = transforms.RandomFlip()(x, rng=np.random.default_rng(1))
    np.testing.assert_array_equal(x, before)
    flipped = np.array([np.array_equal(o, i[:, ::-1]) for o, i in zip(out, x, strict=True)])
    kept = np.array([np.array_equal(o, i) for o, i in zip(out, x, strict=True)])
    assert np.all(flipped | kept) and 10 < flipped.sum() < 54
    vertical = transforms.RandomFlip(horizontal=False, vertical=True, probability=1.0)(x)
    np.testing.assert_array_equal(vertical, x[:, ::-1])


def test_a_seed_gives_a_stream_same_in_every_run_different_per_call():
    x = images()
    first, second = transforms.RandomCrop(8, padding=4, seed=3), transforms.RandomCrop(
        8, padding=4, seed=3)
    a1, a2 = first(x), first(x)
    b1, b2 = second(x), second(x)
    np.testing.assert_array_equal(a1, b1)
    np.testing.assert_array_equal(a2, b2)
    assert not np.array_equal(a1, a2)


def test_one_image_gets_what_a_batch_of_one_gets():
    image = images(1)[0]
    augment = transforms.Compose([transforms.RandomCrop(8, padding=2), transforms.RandomFlip(),
                                  transforms.ColorJitter(0.3, 0.3, 0.3, 0.1),
                                  transforms.Normalize([0.5] * 3, [0.2] * 3)])
    single = augment(image, rng=np.random.default_rng(9))
    batch = augment(image[None], rng=np.random.default_rng(9))
    assert single.shape == (8, 8, 3)
    np.testing.assert_allclose(single, batch[0], rtol=1e-6)
    with pytest.raises(ValueError, match=r"images\[\.\.\., None\]"):
        augment(np.zeros((8, 8)))


def test_crops_and_flips_keep_stored_uint8_images_as_they_are():
    stored = (images(8) * 255).astype(np.uint8)
    out = transforms.Compose([transforms.RandomCrop(8, padding=2), transforms.RandomFlip()])(
        stored, rng=np.random.default_rng(0))
    assert out.dtype == np.uint8 and out.shape == stored.shape


def test_normalize_and_resize():
    x = images(2)
    np.testing.assert_allclose(transforms.Normalize([0.5, 0.4, 0.3], [0.1, 0.2, 0.5])(x),
                               (x - [0.5, 0.4, 0.3]) / [0.1, 0.2, 0.5], rtol=1e-5)
    # Bilinear interpolation reproduces a linear ramp exactly (away from the clamped edge).
    ramp = np.broadcast_to(np.arange(16, dtype=np.float32)[None, :, None], (16, 16, 1))
    half = transforms.Resize((8, 8))(ramp)
    np.testing.assert_allclose(half[0, :, 0], np.arange(8) * 2 + 0.5)
    assert transforms.Resize(8)(np.zeros((2, 16, 32, 3), np.float32)).shape == (2, 8, 16, 3)
    assert transforms.Resize((8, 8))(x) is x  # already that size: untouched


def test_random_resized_crop_of_the_whole_image_is_a_resize():
    x = images(4, size=16)
    whole = transforms.RandomResizedCrop(8, scale=(1.0, 1.0), ratio=(1.0, 1.0))(x)
    np.testing.assert_allclose(whole, transforms.Resize((8, 8))(x), rtol=1e-5, atol=1e-6)
    crops = transforms.RandomResizedCrop(8, seed=0)(x)
    assert crops.shape == (4, 8, 8, 3) and not np.allclose(crops, whole)


def test_color_jitter_factors_and_hue_keeps_grey():
    x = images(8) * 0.5
    out = transforms.ColorJitter(brightness=0.5)(x, rng=np.random.default_rng(2))
    factor = np.random.default_rng(2).uniform(0.5, 1.5, 8).astype(np.float32)
    np.testing.assert_allclose(out, np.clip(x * factor[:, None, None, None], 0, 1), rtol=1e-6)
    grey = np.repeat(images(4, channels=1), 3, axis=-1)
    np.testing.assert_allclose(transforms.ColorJitter(hue=0.5, seed=0)(grey), grey, atol=1e-5)
    with pytest.raises(ValueError, match="3 channels"):
        transforms.ColorJitter(saturation=0.2)(images(2, channels=1))
    with pytest.raises(TypeError, match=r"astype\(np.float32\) / 255"):
        transforms.ColorJitter(brightness=0.2)(np.zeros((2, 4, 4, 3), np.uint8))


def test_deterministic_parts_for_validation_and_inference():
    augment = transforms.Compose([transforms.RandomResizedCrop(8), transforms.RandomFlip(),
                                  transforms.ColorJitter(0.2), transforms.Normalize(0.5, 0.5)])
    kept = augment.deterministic()
    assert [type(t).__name__ for t in kept.transforms] == ["Resize", "Normalize"]
    x = images(2, size=16)
    np.testing.assert_array_equal(kept(x), kept(x))
    crop = transforms.RandomCrop(8, padding=4).deterministic()
    np.testing.assert_array_equal(crop(images(2)), images(2))  # the unpadded size: as is
    assert crop(images(2, size=12)).shape == (2, 8, 8, 3)     # larger: the centre


def test_batches_from_arrays_takes_a_transform_keyed_by_epoch_and_batch():
    x, y = np.concatenate([images(8)] * 3), np.arange(24) % 3  # three identical batches
    augment = transforms.Compose([transforms.RandomCrop(8, padding=4), transforms.RandomFlip()])
    data = Batches.from_arrays(x, y, batch_size=8, seed=1, transform=augment)

    def epoch(k):
        data.epoch = k
        return [b.numpy() for b, _ in data]

    first, second = epoch(0), epoch(1)
    for a, b in zip(epoch(0), first, strict=True):  # a resumed pass augments the same way
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], second[0])  # each epoch its own draws
    assert not np.array_equal(first[0], first[1])   # each batch its own draws
    other_seed = Batches.from_arrays(x, y, batch_size=8, seed=2, transform=augment)
    assert not np.array_equal(first[0], next(iter(other_seed)).data.numpy())
    with pytest.raises(TypeError, match="transform must be a function"):
        Batches.from_arrays(x, y, batch_size=8, transform="flip")


def test_data_sets_augment_training_and_give_validation_the_deterministic_part(tmp_path):
    augment = transforms.Compose([transforms.RandomFlip(probability=1.0),
                                  transforms.Normalize(0.5, 0.5)])
    shapes = Shapes(batch_size=8, training_size=8, validation_size=8, seed=0, transform=augment,
                    prefetch=False)
    plain = Shapes(batch_size=8, training_size=8, validation_size=8, seed=0, prefetch=False)
    (train, _), (raw, _) = next(iter(shapes.training)), next(iter(plain.training))
    np.testing.assert_allclose(train.numpy(), (raw.numpy()[:, :, ::-1] - 0.5) / 0.5, atol=1e-6)
    (val, _), (raw_val, _) = next(iter(shapes.validation)), next(iter(plain.validation))
    np.testing.assert_allclose(val.numpy(), (raw_val.numpy() - 0.5) / 0.5, atol=1e-6)

    for (name, colour), count in zip(sorted(COLOURS.items()), (5, 5, 5), strict=True):
        for i in range(count):
            write_image(tmp_path / name / f"{i}.png", colour, size=(12, 12))
    folder = ImageFolder(tmp_path, image_size=12, batch_size=4, seed=0,
                         transform=transforms.RandomCrop(8, padding=1),
                         validation_transform=transforms.CenterCrop(6))
    assert next(iter(folder.training)).data.shape == (4, 8, 8, 3)
    assert next(iter(folder.validation)).data.shape[1:] == (6, 6, 3)


def test_plain_functions_are_preprocessing_kept_for_validation():
    def square_root(batch):
        return np.sqrt(batch)

    mixed = transforms.Compose([transforms.RandomFlip(), square_root])
    assert mixed.random and mixed.deterministic().transforms == [square_root]
    assert not transforms.Compose([square_root]).random
    assert transforms.validation_transform(square_root) is square_root
    assert transforms.validation_transform(mixed, given=square_root) is square_root
