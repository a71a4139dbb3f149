"""The common shape of every labeled image data set: training and validation.

Images are kept in memory as stored (uint8, NHWC) and scaled to float32 one
batch at a time: to [0, 1] by default, or standardised per channel when
``normalize=`` asks for it.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from . import transforms
from .batching import Batches, _ArrayExamples
from .download import data_directory

__all__ = ["Dataset"]

Normalize = bool | tuple | None


class Dataset:
    """A labeled image data set: ``training`` and ``validation`` batches.

    Attributes
    ----------
    training : Batches
        Reshuffled on every pass; one pass is one epoch.
    validation : Batches
        Always in the same order, every example once (never drops a partial
        batch, so that accuracy is measured on the whole set).
    class_names : tuple of str
        The name of class ``i`` is ``class_names[i]``.
    image_shape : tuple of int
        ``(height, width, channels)`` of one image.
    normalization : tuple of (numpy.ndarray, numpy.ndarray) or None
        The per-channel ``(mean, std)`` subtracted and divided after scaling
        to [0, 1], or ``None`` when images are only scaled.

    Examples
    --------
    >>> from s4tf import datasets
    >>> digits = datasets.Digits(batch_size=64, seed=0)
    >>> digits.num_classes, digits.image_shape
    (10, (8, 8, 1))
    >>> for images, labels in digits.training:
    ...     pass
    """

    training: Batches
    validation: Batches
    class_names: tuple[str, ...]
    image_shape: tuple[int, ...]
    normalization: tuple[np.ndarray, np.ndarray] | None

    @property
    def num_classes(self) -> int:
        """The number of classes."""
        return len(self.class_names)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(training={self.training.num_examples} examples in "
            f"{len(self.training)} batches of {self.training.batch_size}, "
            f"validation={self.validation.num_examples} examples, "
            f"{self.num_classes} classes, image_shape={self.image_shape})"
        )


class _DownloadedDataset(Dataset):
    """A data set whose files are fetched into a directory and read into memory.

    The MNIST family and CIFAR share this constructor; a subclass names its
    directory under ``S4TF_DATA_DIR`` (``_directory``) and reads its files in
    ``_arrays(directory, download, verify)``, which returns the training and validation
    ``(uint8 NHWC images, int labels)`` pairs and the class names.
    """

    _directory: str

    def __init__(
        self,
        batch_size: int = 128,
        root: str | os.PathLike | None = None,
        download: bool = True,
        *,
        verify: bool = True,
        normalize: Normalize = False,
        seed: int | None = None,
        drop_remainder: bool = False,
        prefetch: bool = True,
        transform=None,
        validation_transform=None,
    ):
        training, validation, class_names = self._arrays(
            data_directory(self._directory, root), download, verify
        )
        _in_memory(
            self,
            training=training,
            validation=validation,
            maximum=255,
            class_names=class_names,
            batch_size=batch_size,
            normalize=normalize,
            seed=seed,
            drop_remainder=drop_remainder,
            prefetch=prefetch,
            transform=transform,
            validation_transform=validation_transform,
        )

    def _arrays(self, directory: Path, download: bool, verify: bool):
        raise NotImplementedError  # abstract: each data set reads its own files


class _ImageScaling:
    """Turn a batch of stored integer images into float32 network inputs."""

    def __init__(self, maximum: float, normalization: tuple[np.ndarray, np.ndarray] | None):
        self.scale = np.float32(1.0 / maximum)
        self.normalization = normalization

    def __call__(self, images: np.ndarray) -> np.ndarray:
        out = images.astype(np.float32)
        out *= self.scale
        if self.normalization is not None:
            mean, std = self.normalization
            out -= mean
            out /= std
        return out


def _resolve_normalization(
    normalize: Normalize,
    channels: int,
    standard: Callable[[], tuple[Sequence[float], Sequence[float]]],
    dataset: str,
) -> tuple[np.ndarray, np.ndarray] | None:
    """Turn the user's ``normalize=`` into per-channel float32 (mean, std) or None.

    ``standard`` gives the data set's own constants; it is called only when
    asked for, because computing them may take a pass over the data.
    """
    if normalize is None or normalize is False:
        return None
    if normalize is True:
        mean, std = standard()
    elif isinstance(normalize, (tuple, list)) and len(normalize) == 2:
        mean, std = normalize
    else:
        raise TypeError(
            f"{dataset}: normalize must be False (scale to [0, 1]), True (the data set's "
            f"per-channel mean and standard deviation) or a (mean, std) pair of numbers or "
            f"per-channel sequences; received normalize={normalize!r}."
        )
    pair = []
    for name, value in (("mean", mean), ("std", std)):
        array = np.asarray(value, dtype=np.float32).reshape(-1)
        if array.size == 1:
            array = np.repeat(array, channels)
        if array.size != channels:
            raise ValueError(
                f"{dataset}: normalize {name} must be one number or one per channel "
                f"({channels} channels); received {name}={value!r}."
            )
        pair.append(array)
    if np.any(pair[1] <= 0):
        raise ValueError(
            f"{dataset}: normalize std must be positive (it divides the images); "
            f"received std={std!r}."
        )
    return pair[0], pair[1]


def _channel_statistics(images: np.ndarray, maximum: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact per-channel mean and standard deviation of uint8 NHWC images in [0, 1].

    Counting each pixel value (a histogram) is exact and far cheaper than a
    float copy of the whole set; for the official MNIST training files it
    gives the familiar 0.1307 and 0.3081.
    """
    values = np.arange(maximum + 1, dtype=np.float64) / maximum
    means, stds = [], []
    for channel in range(images.shape[-1]):
        counts = np.bincount(images[..., channel].ravel(), minlength=maximum + 1)
        counts = counts.astype(np.float64)
        total = counts.sum()
        mean = (counts * values).sum() / total
        variance = (counts * (values - mean) ** 2).sum() / total
        means.append(mean)
        # A constant channel has no spread to divide by; leave its scale alone.
        stds.append(np.sqrt(variance) if variance > 0 else 1.0)
    return np.array(means), np.array(stds)


def _in_memory(
    dataset: Dataset,
    *,
    training: tuple[np.ndarray, np.ndarray],
    validation: tuple[np.ndarray, np.ndarray],
    maximum: int,
    class_names: Sequence[str],
    batch_size: int,
    normalize: Normalize,
    seed: int | None,
    drop_remainder: bool,
    prefetch: bool,
    transform=None,
    validation_transform=None,
) -> None:
    """Fill in ``dataset`` from uint8 NHWC images whose values run up to ``maximum``."""
    train_images, train_labels = training
    name = type(dataset).__name__
    for split, labels in (("training", train_labels), ("validation", validation[1])):
        if labels.size and (labels.min() < 0 or labels.max() >= len(class_names)):
            raise ValueError(
                f"{name}: {split} labels must lie in [0, {len(class_names) - 1}]; found "
                f"labels from {labels.min()} to {labels.max()}. The files are not {name}'s."
            )
    normalization = _resolve_normalization(
        normalize,
        train_images.shape[-1],
        lambda: _channel_statistics(train_images, maximum),
        name,
    )
    scaling = _ImageScaling(maximum, normalization)
    dataset.class_names = tuple(class_names)
    dataset.image_shape = tuple(int(d) for d in train_images.shape[1:])
    dataset.normalization = normalization
    _set_splits(
        dataset,
        _ArrayExamples(train_images, train_labels, scaling),
        _ArrayExamples(validation[0], validation[1], scaling),
        batch_size=batch_size,
        seed=seed,
        drop_remainder=drop_remainder,
        prefetch=prefetch,
        transform=transform,
        validation_transform=validation_transform,
    )


def _set_splits(
    dataset: Dataset,
    training,
    validation,
    *,
    batch_size: int,
    seed: int | None,
    drop_remainder: bool,
    prefetch: bool,
    transform=None,
    validation_transform=None,
) -> None:
    """Give ``dataset`` its ``training`` and ``validation`` batches over these examples.

    Training is reshuffled every pass; validation keeps its order and its last,
    smaller batch, so that accuracy is measured on every example. Training
    batches get ``transform``; validation ones get
    :func:`~s4tf.datasets.transforms.validation_transform` of it.
    """
    dataset.training = Batches(
        training,
        batch_size,
        shuffle=True,
        seed=seed,
        drop_remainder=drop_remainder,
        prefetch=prefetch,
        transform=transform,
    )
    dataset.validation = Batches(
        validation, batch_size, shuffle=False, prefetch=prefetch,
        transform=transforms.validation_transform(transform, validation_transform),
    )


def _options_doc(*, standard: str, prefetch: str = "Prepare") -> str:
    """The docstring entries of the keywords every data set takes, ``normalize`` on.

    ``standard`` says what ``normalize=True`` standardises by; ``prefetch`` is
    the verb of what the background thread does to the next batch.
    """
    normalize = textwrap.fill(
        f"``False`` (default): images scaled to [0, 1]. ``True``: then standardised "
        f"{standard}. A ``(mean, std)`` pair: standardised by those.",
        width=78,
        initial_indent=" " * 8,
        subsequent_indent=" " * 8,
    )
    return f"""    normalize : bool or (mean, std)
{normalize}
    seed : int or None
        Seeds the training shuffle (see :class:`Batches`).
    drop_remainder : bool
        Skip the last, smaller training batch.
    prefetch : bool
        {prefetch} the next batch in a background thread.
    transform : callable, optional
        Applied to every training batch (float32 NHWC NumPy images, after the
        scaling above), e.g. augmentation from :mod:`s4tf.datasets.transforms`.
    validation_transform : callable, optional
        Applied to every validation batch; by default the deterministic part
        of ``transform`` (``transform.deterministic()``: random crops become
        centre crops, flips go, ``Normalize`` stays; a plain function is
        applied as it is). Pass ``transforms.Compose([])`` for none.
"""
