"""Digits: the UCI optical-digits set, shipped inside s4tf so examples run offline."""

from __future__ import annotations

from importlib import resources

import numpy as np

from .dataset import Dataset, Normalize, _in_memory, _options_doc

__all__ = ["Digits"]

_FILE = "digits.npz"
_EXAMPLES = 1797
_VALIDATION = 360


class Digits(Dataset):
    __doc__ = (
        """1,797 handwritten digits as 8x8 grey images, bundled with s4tf.

    The test set of E. Alpaydin and C. Kaynak's "Optical Recognition of
    Handwritten Digits" (UCI Machine Learning Repository, CC BY 4.0): 32x32
    bitmaps from 43 writers, reduced to 8x8 by counting the set pixels in each
    4x4 block, so pixels are integers in [0, 16]. The file ships in the package
    (``s4tf/datasets/data/digits.npz``) and needs no download.

    The split is fixed: the first 1,437 examples train and the last 360
    validate. The file interleaves the classes, so each class has 33 to 37
    validation examples.

    Parameters
    ----------
    batch_size : int
        Examples per batch.
"""
        + _options_doc(standard="by the training split's mean and standard deviation")
        + """
    Examples
    --------
    >>> from s4tf import datasets
    >>> digits = datasets.Digits(batch_size=100, seed=0)
    >>> images, labels = next(iter(digits.training))
    >>> images.shape, labels.shape
    ((100, 8, 8, 1), (100,))
    >>> digits.training.num_examples, digits.validation.num_examples
    (1437, 360)
"""
    )

    def __init__(
        self,
        batch_size: int = 128,
        *,
        normalize: Normalize = False,
        seed: int | None = None,
        drop_remainder: bool = False,
        prefetch: bool = True,
        transform=None,
        validation_transform=None,
    ):
        images, labels = _load()
        images = images[..., np.newaxis]
        split = _EXAMPLES - _VALIDATION
        _in_memory(
            self,
            training=(images[:split], labels[:split]),
            validation=(images[split:], labels[split:]),
            maximum=16,
            class_names=[str(digit) for digit in range(10)],
            batch_size=batch_size,
            normalize=normalize,
            seed=seed,
            drop_remainder=drop_remainder,
            prefetch=prefetch,
            transform=transform,
            validation_transform=validation_transform,
        )


def _load() -> tuple[np.ndarray, np.ndarray]:
    source = resources.files(__package__).joinpath("data").joinpath(_FILE)
    with source.open("rb") as file, np.load(file) as archive:
        images, labels = archive["images"], archive["labels"]
    if images.shape != (_EXAMPLES, 8, 8) or labels.shape != (_EXAMPLES,):
        raise RuntimeError(
            f"The bundled {_FILE} holds images {images.shape} and labels {labels.shape}, "
            f"expected ({_EXAMPLES}, 8, 8) and ({_EXAMPLES},): the s4tf installation is "
            f"damaged; reinstall s4tf."
        )
    return images.astype(np.uint8), labels.astype(np.int32)
