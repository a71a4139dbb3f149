"""ImageFolder: a labeled data set from a directory of image files, one folder per class.

Images are decoded (with pillow) when their batch is assembled, in the
prefetch thread, so a folder larger than memory works and decoding overlaps
training. 16-bit greyscale images keep their 16 bits through resizing; an
image over Pillow's pixel limit is refused before its pixels are decoded.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from .dataset import (
    Dataset,
    Normalize,
    _ImageScaling,
    _options_doc,
    _resolve_normalization,
    _set_splits,
)
from .download import CorruptDataError

__all__ = ["ImageFolder"]

IMAGE_SUFFIXES = frozenset(
    {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".ppm", ".pgm", ".tif", ".tiff", ".webp"}
)
_TRAINING_NAMES = ("train", "training")
_VALIDATION_NAMES = ("val", "validation", "valid", "test")
# The per-channel mean and standard deviation of ImageNet's training images,
# the usual constants for natural photographs.
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


class _ImageFiles:
    """Examples stored as image files, decoded and resized one batch at a time."""

    def __init__(self, paths, labels, size: tuple[int, int], mode: str, scaling):
        self.paths = list(paths)
        self.labels = np.asarray(labels, dtype=np.int32)
        self.size = size
        self.mode = mode
        self.scaling = scaling

    def __len__(self) -> int:
        return len(self.paths)

    def take(self, index: np.ndarray | slice) -> tuple[np.ndarray, np.ndarray]:
        positions = range(len(self.paths))[index] if isinstance(index, slice) else index
        images = np.stack([self._decode(self.paths[i]) for i in positions])
        if images.ndim == 3:  # grey images decode without a channel axis
            images = images[..., np.newaxis]
        return self.scaling(images), self.labels[index]

    def _decode(self, path: Path) -> np.ndarray:
        height, width = self.size
        try:
            with Image.open(path) as image:
                _refuse_bombs(image, path)
                if image.mode in _SIXTEEN_BIT:
                    return _decode_16_bit(image, self.mode, (width, height))
                image = image.convert(self.mode)
                # Scale the shorter side to fit, then crop the centre: the
                # aspect ratio is kept, as ImageNet-style pipelines do.
                image = ImageOps.fit(image, (width, height), Image.Resampling.BILINEAR)
                return np.asarray(image, dtype=np.uint8)
        except CorruptDataError:
            raise
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as error:
            # Pillow refused the file in Image.open (over twice its limit, or
            # over it where warnings are errors).
            raise CorruptDataError(_bomb_message(
                path, f"over twice Pillow's limit of {Image.MAX_IMAGE_PIXELS} pixels; Pillow says: "
                      f"{error}")) from None
        except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as error:
            raise CorruptDataError(
                f"ImageFolder could not decode {path} ({type(error).__name__}: {error}). "
                f"Replace or remove that file."
            ) from error


# Pillow's modes of 16-bit greyscale (PNG, TIFF): "I;16*", or "I" in older
# Pillow. Converting them to "L" clips every value above 255 to white.
_SIXTEEN_BIT = frozenset({"I;16", "I;16L", "I;16B", "I;16N", "I"})
_SIXTEEN_BIT_MAX = 65535.0


def _decode_16_bit(image, mode: str, size: tuple[int, int]) -> np.ndarray:
    """A 16-bit greyscale image resized like the others, as float32 on the 0..255 scale.

    Resizing runs on 32-bit floats ("F"), so the 16 bits survive; the batch's
    scaling then divides by 255 as for 8-bit images, giving ``value / 65535``.
    """
    image = ImageOps.fit(image.convert("F"), size, Image.Resampling.BILINEAR)
    grey = np.clip(np.asarray(image, dtype=np.float32), 0.0, _SIXTEEN_BIT_MAX)
    grey *= np.float32(255.0 / _SIXTEEN_BIT_MAX)
    return grey if mode == "L" else np.repeat(grey[..., np.newaxis], 3, axis=-1)


def _refuse_bombs(image, path: Path) -> None:
    # Image.open only warns between Pillow's limit and twice it, and a warning
    # cannot be caught in the prefetch thread without changing every thread's
    # warning filters: the size is checked here, before any pixel is decoded.
    limit = Image.MAX_IMAGE_PIXELS
    pixels = image.width * image.height
    if limit is not None and pixels > limit:
        raise CorruptDataError(_bomb_message(
            path, f"{image.width}x{image.height} = {pixels} pixels, over Pillow's limit of "
                  f"{limit} pixels", pixels))


def _bomb_message(path: Path, detail: str, pixels: int | None = None) -> str:
    example = pixels if pixels is not None else "<the image size in pixels, above>"
    return (
        f"ImageFolder refused {path} as a possible decompression bomb ({detail}): a small file "
        "that decodes to that many pixels can exhaust memory. If you trust the file, raise the "
        f"limit before reading: PIL.Image.MAX_IMAGE_PIXELS = {example} (None switches the "
        "check off); otherwise remove or shrink that file."
    )


class ImageFolder(Dataset):
    __doc__ = (
        """A labeled image data set read from folders of image files.

    Either ``path`` holds a training folder (``train/`` or ``training/``) and
    a validation folder (``val/``, ``validation/``, ``valid/`` or ``test/``),
    each with one sub-folder per class::

        path/train/cat/001.png   path/val/cat/100.png
        path/train/dog/002.jpg   path/val/dog/200.jpg

    or ``path`` holds the class folders directly, and a fixed
    ``validation_fraction`` of each class (chosen by a seeded permutation, so
    always the same files) is held out for validation. Class ``i`` is the
    ``i``-th class folder name in sorted order; files in nested folders of a
    class count for that class.

    Pixel values are scaled by their own range: 8-bit images by 255, 16-bit
    greyscale images (PNG, TIFF) by 65535. An image with more pixels than
    Pillow's decompression-bomb limit (``PIL.Image.MAX_IMAGE_PIXELS``) is
    refused with a ``CorruptDataError`` naming it; raise the limit for files
    you trust.

    Parameters
    ----------
    path : path-like
        The directory described above.
    image_size : int or (height, width)
        Every image is resized, keeping its aspect ratio, and centre-cropped to
        this size.
    batch_size : int
        Examples per batch.
    channels : {3, 1}
        Decode as RGB (3) or greyscale (1).
    validation_fraction : float
        The share of each class held out when there is no validation folder.
"""
        + _options_doc(standard="with ImageNet's per-channel constants (RGB only)",
                       prefetch="Decode")
        + """
    Examples
    --------
    >>> from s4tf import datasets
    >>> pets = datasets.ImageFolder("pets/", image_size=64, batch_size=32)  # doctest: +SKIP
    >>> pets.class_names                                                   # doctest: +SKIP
    ('cat', 'dog')
    >>> images, labels = next(iter(pets.training))                         # doctest: +SKIP
    >>> images.shape                                                       # doctest: +SKIP
    (32, 64, 64, 3)
"""
    )

    def __init__(
        self,
        path: str | os.PathLike,
        image_size: int | tuple[int, int],
        batch_size: int = 128,
        *,
        channels: int = 3,
        validation_fraction: float = 0.2,
        normalize: Normalize = False,
        seed: int | None = None,
        drop_remainder: bool = False,
        prefetch: bool = True,
        transform=None,
        validation_transform=None,
    ):
        name = type(self).__name__
        root = Path(path).expanduser()
        if not root.is_dir():
            raise FileNotFoundError(
                f"{name}: {root} is not a directory. Pass the folder that holds train/ and "
                f"val/ (or one sub-folder per class)."
            )
        size = _image_size(image_size, name)
        if channels not in (1, 3):
            raise ValueError(f"{name}: channels must be 1 or 3; received channels={channels!r}.")
        if not 0.0 < validation_fraction < 1.0:
            raise ValueError(
                f"{name}: validation_fraction must lie strictly between 0 and 1; "
                f"received validation_fraction={validation_fraction!r}."
            )

        training_dir = _first_existing(root, _TRAINING_NAMES)
        validation_dir = _first_existing(root, _VALIDATION_NAMES)
        if training_dir is not None and validation_dir is None:
            raise FileNotFoundError(
                f"{name}: {root} has a {training_dir.name}/ folder but no validation folder "
                f"(one of {', '.join(n + '/' for n in _VALIDATION_NAMES)}). Add one, or point "
                f"path= at the class folders to hold out validation_fraction of each class."
            )
        if training_dir is not None:
            class_names = _class_folders(training_dir, name)
            training = _list_images(training_dir, class_names, name)
            validation = _list_images(validation_dir, class_names, name, allow_empty=True)
            unknown = sorted(
                d.name for d in validation_dir.iterdir() if _is_class_dir(d)
                and d.name not in class_names
            )
            if unknown:
                raise ValueError(
                    f"{name}: {validation_dir} has class folders {unknown} that "
                    f"{training_dir} lacks; every validation class needs training examples."
                )
        else:
            class_names = _class_folders(root, name)
            training, validation = _hold_out(
                _list_images(root, class_names, name), validation_fraction
            )

        def imagenet() -> tuple[Sequence[float], Sequence[float]]:
            if channels != 3:
                raise ValueError(
                    f"{name}: normalize=True uses ImageNet's RGB constants, which do not "
                    f"apply to greyscale images; pass normalize=(mean, std) instead."
                )
            return IMAGENET_MEAN, IMAGENET_STD

        self.normalization = _resolve_normalization(normalize, channels, imagenet, name)
        scaling = _ImageScaling(255, self.normalization)
        mode = "RGB" if channels == 3 else "L"
        self.path = root
        self.class_names = tuple(class_names)
        self.image_shape = (*size, channels)

        def files(examples: list[tuple[Path, int]]) -> _ImageFiles:
            paths = [path for path, _ in examples]
            labels = [label for _, label in examples]
            return _ImageFiles(paths, labels, size, mode, scaling)

        _set_splits(
            self,
            files(training),
            files(validation),
            batch_size=batch_size,
            seed=seed,
            drop_remainder=drop_remainder,
            prefetch=prefetch,
            transform=transform,
            validation_transform=validation_transform,
        )


def _image_size(image_size, name: str) -> tuple[int, int]:
    if isinstance(image_size, (int, np.integer)) and not isinstance(image_size, bool):
        size = (int(image_size), int(image_size))
    elif (
        isinstance(image_size, (tuple, list))
        and len(image_size) == 2
        and all(isinstance(s, (int, np.integer)) for s in image_size)
    ):
        size = (int(image_size[0]), int(image_size[1]))
    else:
        size = (0, 0)
    if min(size) < 1:
        raise ValueError(
            f"{name}: image_size must be a positive int or a (height, width) pair of "
            f"positive ints; received image_size={image_size!r}."
        )
    return size


def _first_existing(root: Path, names: Sequence[str]) -> Path | None:
    for candidate in names:
        if (root / candidate).is_dir():
            return root / candidate
    return None


def _is_class_dir(path: Path) -> bool:
    return path.is_dir() and not path.name.startswith(".")


def _class_folders(directory: Path, name: str) -> list[str]:
    classes = sorted(d.name for d in directory.iterdir() if _is_class_dir(d))
    if not classes:
        raise FileNotFoundError(
            f"{name}: {directory} has no class folders. Put each class's images in its own "
            f"sub-folder, e.g. {directory / 'cat'}/ and {directory / 'dog'}/."
        )
    return classes


def _list_images(
    directory: Path, class_names: Sequence[str], name: str, *, allow_empty: bool = False
) -> list[tuple[Path, int]]:
    """(file, label) pairs of every image under ``directory/<class>/``, sorted."""
    found = []
    for label, class_name in enumerate(class_names):
        folder = directory / class_name
        files = sorted(
            p for p in folder.rglob("*")
            if p.suffix.lower() in IMAGE_SUFFIXES and not p.name.startswith(".") and p.is_file()
        ) if folder.is_dir() else []
        if not files and not allow_empty:
            raise FileNotFoundError(
                f"{name}: class folder {folder} holds no images (looked for files ending in "
                f"{', '.join(sorted(IMAGE_SUFFIXES))}). Add images or remove the folder."
            )
        found.extend((file, label) for file in files)
    return found


def _hold_out(
    examples: list[tuple[Path, int]], fraction: float
) -> tuple[list[tuple[Path, int]], list[tuple[Path, int]]]:
    """Split each class: a seeded, hence fixed, ``fraction`` goes to validation."""
    labels = np.array([label for _, label in examples])
    rng = np.random.default_rng(0)
    validation_positions = []
    for label in np.unique(labels):
        positions = np.flatnonzero(labels == label)
        count = int(round(fraction * len(positions)))
        # Keep at least one training example per class.
        count = min(count, len(positions) - 1)
        validation_positions.extend(rng.permutation(positions)[:count].tolist())
    held_out = set(validation_positions)
    training = [e for i, e in enumerate(examples) if i not in held_out]
    validation = [e for i, e in enumerate(examples) if i in held_out]
    return training, validation
