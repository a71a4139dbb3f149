import numpy as np
import pytest
from dataset_files import COLOURS, write_image
from PIL import Image

from s4tf.datasets import CorruptDataError, ImageFolder


def stacked(batches):
    parts = list(batches._numpy_batches())
    return np.concatenate([d for d, _ in parts]), np.concatenate([l for _, l in parts])


def colour_of(label: int, names) -> np.ndarray:
    return np.array(COLOURS[names[label]], np.float32) / 255.0


def write_split_folders(root, train=(3, 2, 4), val=(1, 2, 1)):
    for split, counts in (("train", train), ("val", val)):
        for (name, colour), count in zip(sorted(COLOURS.items()), counts, strict=True):
            for i in range(count):
                write_image(root / split / name / f"{i}.png", colour, size=(12 + i, 10))


def test_train_and_val_folders_give_labeled_float_images(tmp_path):
    write_split_folders(tmp_path)
    folder = ImageFolder(tmp_path, image_size=8, batch_size=4, seed=0)
    assert folder.class_names == ("blue", "green", "red")
    assert folder.image_shape == (8, 8, 3)
    assert folder.training.num_examples == 9 and folder.validation.num_examples == 4
    images, labels = stacked(folder.training)
    assert images.shape == (9, 8, 8, 3) and images.dtype == np.float32
    assert labels.dtype == np.int32 and sorted(labels.tolist()) == [0, 0, 0, 1, 1, 2, 2, 2, 2]
    for image, label in zip(images, labels, strict=True):
        np.testing.assert_allclose(image, np.broadcast_to(colour_of(label, folder.class_names),
                                                          image.shape), atol=1e-6)
    _, val_labels = stacked(folder.validation)
    assert val_labels.tolist() == [0, 1, 1, 2]  # ordered: class by class, files sorted


def test_images_are_resized_keeping_the_aspect_ratio_then_centre_cropped(tmp_path):
    # Left third black, middle white, right third black: a centre crop of a
    # wide image keeps mostly the white middle.
    image = np.zeros((10, 30, 3), np.uint8)
    image[:, 10:20] = 255
    for split in ("train", "val"):
        (tmp_path / split / "stripe").mkdir(parents=True)
        Image.fromarray(image).save(tmp_path / split / "stripe" / "a.png")
    folder = ImageFolder(tmp_path, image_size=(5, 5), batch_size=1)
    out, _ = stacked(folder.validation)
    assert out.shape == (1, 5, 5, 3)
    assert out[0, :, 1:4].min() > 0.9  # the middle columns are the white stripe


def test_greyscale_decoding(tmp_path):
    write_split_folders(tmp_path)
    folder = ImageFolder(tmp_path, image_size=(4, 6), channels=1, batch_size=16)
    images, labels = stacked(folder.validation)
    assert images.shape == (4, 4, 6, 1)
    # Pillow's luminance weights: L = 0.299 R + 0.587 G + 0.114 B.
    expected = {0: round(0.114 * 255), 1: round(0.587 * 255), 2: round(0.299 * 255)}
    for image, label in zip(images, labels, strict=True):
        assert abs(image.mean() * 255 - expected[label]) <= 1


def test_class_folders_without_splits_hold_out_a_fixed_fraction(tmp_path):
    for name, colour in COLOURS.items():
        for i in range(10):
            write_image(tmp_path / name / f"{i:02}.png", colour)
    first = ImageFolder(tmp_path, image_size=4, validation_fraction=0.2)
    second = ImageFolder(tmp_path, image_size=4, validation_fraction=0.2)
    val_files = first.validation.examples.paths
    assert val_files == second.validation.examples.paths  # deterministic
    assert len(val_files) == 6 and first.training.num_examples == 24
    assert not set(val_files) & set(first.training.examples.paths)
    _, labels = stacked(first.validation)
    assert np.bincount(labels).tolist() == [2, 2, 2]  # stratified per class


def test_normalize_true_uses_imagenet_constants(tmp_path):
    write_split_folders(tmp_path)
    folder = ImageFolder(tmp_path, image_size=2, normalize=True, batch_size=16)
    images, labels = stacked(folder.validation)
    mean = np.array([0.485, 0.456, 0.406], np.float32)
    std = np.array([0.229, 0.224, 0.225], np.float32)
    expected = (colour_of(labels[0], folder.class_names) - mean) / std
    np.testing.assert_allclose(images[0, 0, 0], expected, rtol=1e-5)


def test_normalize_true_on_greyscale_asks_for_explicit_constants(tmp_path):
    write_split_folders(tmp_path)
    with pytest.raises(ValueError, match=r"pass normalize=\(mean, std\)"):
        ImageFolder(tmp_path, image_size=2, channels=1, normalize=True)


def test_a_corrupt_image_is_named_when_its_batch_is_read(tmp_path):
    write_split_folders(tmp_path)
    bad = tmp_path / "val" / "green" / "0.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\nthis is not really a png")
    folder = ImageFolder(tmp_path, image_size=4, batch_size=2, prefetch=True)
    with pytest.raises(CorruptDataError, match=str(bad)):
        stacked(folder.validation)


def test_missing_validation_folder_is_explained(tmp_path):
    write_image(tmp_path / "train" / "cat" / "a.png", (1, 2, 3))
    with pytest.raises(FileNotFoundError, match="no validation folder"):
        ImageFolder(tmp_path, image_size=4)


def test_an_empty_class_folder_is_explained(tmp_path):
    write_split_folders(tmp_path)
    (tmp_path / "train" / "yellow").mkdir()
    (tmp_path / "train" / "yellow" / "notes.txt").write_text("no images here")
    with pytest.raises(FileNotFoundError, match="yellow holds no images"):
        ImageFolder(tmp_path, image_size=4)


def test_a_validation_class_unknown_to_training_is_refused(tmp_path):
    write_split_folders(tmp_path)
    write_image(tmp_path / "val" / "purple" / "a.png", (128, 0, 128))
    with pytest.raises(ValueError, match=r"class folders \['purple'\]"):
        ImageFolder(tmp_path, image_size=4)


@pytest.mark.parametrize("size", [0, (4,), (4, -1), "32", 2.5])
def test_a_bad_image_size_is_refused(tmp_path, size):
    write_split_folders(tmp_path)
    with pytest.raises(ValueError, match="image_size must be a positive int"):
        ImageFolder(tmp_path, image_size=size)


def test_a_missing_directory_is_explained(tmp_path):
    with pytest.raises(FileNotFoundError, match="is not a directory"):
        ImageFolder(tmp_path / "absent", image_size=4)


def write_16_bit(path, values: np.ndarray) -> None:
    """A 16-bit greyscale PNG (pillow's mode "I;16") holding ``values`` (0..65535)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(values.astype(np.uint16)).save(path)
    with Image.open(path) as image:
        assert image.mode == "I;16"  # the file really is 16-bit


@pytest.mark.parametrize("channels", [1, 3])
def test_16_bit_images_are_scaled_by_their_own_range(tmp_path, channels):
    ramp = np.linspace(0, 65535, 64 * 64).round().reshape(64, 64)
    for split in ("train", "val"):
        write_16_bit(tmp_path / split / "ramp" / "ramp.png", ramp)
        write_16_bit(tmp_path / split / "solid" / "half.png", np.full((8, 8), 32768))
        write_image(tmp_path / split / "solid" / "white.png", (255, 255, 255), size=(8, 8))
    folder = ImageFolder(tmp_path, image_size=16, channels=channels, batch_size=8)
    images, labels = stacked(folder.validation)
    assert images.shape == (3, 16, 16, channels) and labels.tolist() == [0, 1, 1]
    ramp_image, half, white = images
    # Before, every value above 255 became 1.0: the ramp averaged ~0.996.
    assert abs(ramp_image.mean() - 0.5) < 0.02
    assert ramp_image.min() < 0.05 and ramp_image.max() > 0.95
    np.testing.assert_allclose(half, 32768 / 65535, atol=1e-6)
    np.testing.assert_allclose(white, 1.0)  # an 8-bit image in the same batch


def bomb_folder(tmp_path, size) -> tuple[ImageFolder, object]:
    for split in ("train", "val"):
        write_image(tmp_path / split / "big" / "0.png", (9, 9, 9), size=size)
    return ImageFolder(tmp_path, image_size=4, batch_size=1), tmp_path / "val" / "big" / "0.png"


@pytest.mark.parametrize("size", [(12, 10), (30, 30)])  # over the limit, over twice the limit
def test_a_decompression_bomb_names_the_file_and_how_to_raise_the_limit(tmp_path, monkeypatch,
                                                                        size):
    folder, path = bomb_folder(tmp_path, size)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100)
    with pytest.raises(CorruptDataError) as caught:
        stacked(folder.validation)
    message = str(caught.value)
    assert str(path) in message and "decompression bomb" in message
    assert f"{size[0] * size[1]} pixels" in message and "limit of 100" in message
    assert "PIL.Image.MAX_IMAGE_PIXELS" in message and "If you trust" in message
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", size[0] * size[1])  # the fix it names
    assert stacked(folder.validation)[0].shape == (1, 4, 4, 3)
