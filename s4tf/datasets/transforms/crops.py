"""Crops and flips: strided windows gathered in one copy, one masked copy per flip."""

from __future__ import annotations

import numpy as np

from .base import Transform, size_pair

__all__ = ["CenterCrop", "RandomCrop", "RandomFlip"]


def _gather_windows(images: np.ndarray, top: np.ndarray, left: np.ndarray,
                    height: int, width: int) -> np.ndarray:
    """``images[i, top[i]:top[i]+height, left[i]:left[i]+width]`` for every i, in one copy."""
    windows = np.lib.stride_tricks.sliding_window_view(images, (height, width), axis=(1, 2))
    picked = windows[np.arange(len(images)), top, left]  # (n, channels, height, width)
    return np.ascontiguousarray(picked.transpose(0, 2, 3, 1))


class RandomCrop(Transform):
    """Crop a random ``size`` window, after padding each side by ``padding`` pixels.

    The CIFAR recipe is ``RandomCrop(32, padding=4)``: pad with zeros to 40x40
    and take a random 32x32 window, a different one per image. Its
    :meth:`deterministic` counterpart is the centre crop (nothing, when
    ``size`` is the unpadded size).

    Parameters
    ----------
    size : int or (height, width)
    padding : int
        Pixels added on every side before cropping.
    fill : float
        The value of the padding (``mode="constant"``).
    mode : {"constant", "reflect", "edge"}
        How to pad (as :func:`numpy.pad`).
    seed : int or None
        See the module's notes on randomness.

    Examples
    --------
    >>> import numpy as np
    >>> from s4tf.datasets import transforms
    >>> crop = transforms.RandomCrop(2, padding=1, seed=0)
    >>> crop(np.ones((4, 2, 2, 1), np.float32)).shape
    (4, 2, 2, 1)
    """

    random = True

    def __init__(self, size, padding: int = 0, *, fill: float = 0.0, mode: str = "constant",
                 seed: int | None = None):
        super().__init__(seed)
        self.size = size_pair(size, "RandomCrop", "size")
        if isinstance(padding, bool) or not isinstance(padding, (int, np.integer)) or padding < 0:
            raise ValueError(f"RandomCrop: padding must be an int >= 0; received "
                             f"padding={padding!r}.")
        if mode not in ("constant", "reflect", "edge"):
            raise ValueError(f"RandomCrop: mode must be 'constant', 'reflect' or 'edge'; "
                             f"received mode={mode!r}.")
        self.padding, self.fill, self.mode = int(padding), fill, mode

    def apply(self, images, rng):
        p = self.padding
        if p:
            widths = ((0, 0), (p, p), (p, p), (0, 0))
            extra = {"constant_values": self.fill} if self.mode == "constant" else {}
            images = np.pad(images, widths, mode=self.mode, **extra)
        height, width = self.size
        n, h, w = images.shape[:3]
        if height > h or width > w:
            raise ValueError(f"RandomCrop: cannot crop {self.size} from images of "
                             f"{(h - 2 * p, w - 2 * p)} padded by {p} to {(h, w)}; use a "
                             "smaller size or more padding.")
        top = rng.integers(0, h - height + 1, n)
        left = rng.integers(0, w - width + 1, n)
        return _gather_windows(images, top, left, height, width)

    def deterministic(self) -> Transform | None:
        return CenterCrop(self.size, skip_if_smaller=True)


class CenterCrop(Transform):
    """Crop the central ``size`` window of every image.

    Parameters
    ----------
    size : int or (height, width)
    skip_if_smaller : bool
        Leave images no larger than ``size`` as they are instead of raising
        (what :meth:`RandomCrop.deterministic` uses, so that validation images
        of the training size pass through).

    Examples
    --------
    >>> import numpy as np
    >>> from s4tf.datasets import transforms
    >>> image = np.arange(16, dtype=np.float32).reshape(4, 4, 1)
    >>> transforms.CenterCrop(2)(image)[..., 0].tolist()
    [[5.0, 6.0], [9.0, 10.0]]
    """

    def __init__(self, size, *, skip_if_smaller: bool = False):
        super().__init__()
        self.size = size_pair(size, "CenterCrop", "size")
        self.skip_if_smaller = skip_if_smaller

    def apply(self, images, rng):
        height, width = self.size
        h, w = images.shape[1:3]
        if (h, w) == (height, width) or (self.skip_if_smaller and height >= h and width >= w):
            return images
        if height > h or width > w:
            raise ValueError(f"CenterCrop: cannot crop {self.size} from images of {(h, w)}.")
        top, left = (h - height) // 2, (w - width) // 2
        return np.ascontiguousarray(images[:, top:top + height, left:left + width])


class RandomFlip(Transform):
    """Mirror each image with probability ``probability`` (left-right by default).

    Examples
    --------
    >>> import numpy as np
    >>> from s4tf.datasets import transforms
    >>> flip = transforms.RandomFlip(probability=1.0)
    >>> flip(np.array([[[0.0], [1.0]]]))[..., 0].tolist()
    [[1.0, 0.0]]
    """

    random = True

    def __init__(self, horizontal: bool = True, vertical: bool = False, *,
                 probability: float = 0.5, seed: int | None = None):
        super().__init__(seed)
        if not (horizontal or vertical):
            raise ValueError("RandomFlip: pass horizontal=True, vertical=True or both.")
        if not 0.0 <= probability <= 1.0:
            raise ValueError(f"RandomFlip: probability must lie in [0, 1]; received "
                             f"probability={probability!r}.")
        self.horizontal, self.vertical, self.probability = horizontal, vertical, probability

    def apply(self, images, rng):
        for axis, on in ((2, self.horizontal), (1, self.vertical)):
            if not on:
                continue
            chosen = np.flatnonzero(rng.random(len(images)) < self.probability)
            if len(chosen):
                images = images.copy()  # the input is never written
                images[chosen] = np.flip(images[chosen], axis=axis)
        return images
