"""Bilinear resizing and Inception's random resized crop, all images in one gather."""

from __future__ import annotations

import math

import numpy as np

from .base import Transform, size_pair

__all__ = ["RandomResizedCrop", "Resize"]


def _bilinear(images: np.ndarray, top, left, height, width, size: tuple[int, int]) -> np.ndarray:
    """Resample each image's box (``top``, ``left``, ``height``, ``width``: per-image float
    arrays) to ``size`` with bilinear interpolation at pixel centres, all images at once."""
    out_h, out_w = size
    n, h, w = images.shape[:3]
    # Source coordinates of the output pixel centres, per image: (n, out_h) and (n, out_w).
    y = top[:, None] + (np.arange(out_h) + 0.5) * (height[:, None] / out_h) - 0.5
    x = left[:, None] + (np.arange(out_w) + 0.5) * (width[:, None] / out_w) - 0.5
    y = np.clip(y, 0, h - 1)
    x = np.clip(x, 0, w - 1)
    y0 = np.floor(y).astype(np.intp)
    x0 = np.floor(x).astype(np.intp)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    dtype = images.dtype if images.dtype.kind == "f" else np.float32
    wy = (y - y0).astype(dtype)[:, :, None, None]
    wx = (x - x0).astype(dtype)[:, None, :, None]
    rows = np.arange(n)[:, None, None]

    def at(ys, xs):
        return images[rows, ys[:, :, None], xs[:, None, :]].astype(dtype, copy=False)

    top_row = at(y0, x0) * (1 - wx) + at(y0, x1) * wx
    bottom_row = at(y1, x0) * (1 - wx) + at(y1, x1) * wx
    return top_row * (1 - wy) + bottom_row * wy


class Resize(Transform):
    """Resize with bilinear interpolation (no anti-aliasing; fine down to about half size).

    ``size=(height, width)`` gives exactly that size; an int ``size`` scales
    the shorter side to it and keeps the aspect ratio (as torchvision's
    ``Resize``), so ``Compose([Resize(256), CenterCrop(224)])`` is the
    ImageNet evaluation recipe.

    Examples
    --------
    >>> import numpy as np
    >>> from s4tf.datasets import transforms
    >>> transforms.Resize(4)(np.zeros((8, 16, 3), np.float32)).shape
    (4, 8, 3)
    >>> transforms.Resize((2, 2))(np.ones((1, 5, 7, 1), np.float32)).tolist()
    [[[[1.0], [1.0]], [[1.0], [1.0]]]]
    """

    def __init__(self, size):
        super().__init__()
        if isinstance(size, (int, np.integer)) and not isinstance(size, bool) and size > 0:
            self.size = int(size)
        else:
            self.size = size_pair(size, "Resize", "size")

    def apply(self, images, rng):
        n, h, w = images.shape[:3]
        if isinstance(self.size, int):
            scale = self.size / min(h, w)
            size = (max(1, round(h * scale)), max(1, round(w * scale)))
        else:
            size = self.size
        if size == (h, w):
            return images
        full = np.zeros(n)
        return _bilinear(images, full, full, full + h, full + w, size)


class RandomResizedCrop(Transform):
    """A random box of random area and aspect ratio, resized to ``size`` (Inception's crop).

    Each image gets its own box: its area is a fraction in ``scale`` of the
    image's and its width/height ratio in ``ratio`` (drawn log-uniformly);
    boxes that do not fit are shrunk to fit. :meth:`deterministic` is the
    resize of the whole image to ``size``.

    Examples
    --------
    >>> import numpy as np
    >>> from s4tf.datasets import transforms
    >>> crop = transforms.RandomResizedCrop(8, seed=0)
    >>> crop(np.random.default_rng(0).random((4, 32, 32, 3))).shape
    (4, 8, 8, 3)
    """

    random = True

    def __init__(self, size, scale: tuple[float, float] = (0.08, 1.0),
                 ratio: tuple[float, float] = (3 / 4, 4 / 3), *, seed: int | None = None):
        super().__init__(seed)
        self.size = size_pair(size, "RandomResizedCrop", "size")
        if not (0 < scale[0] <= scale[1] <= 1):
            raise ValueError(f"RandomResizedCrop: scale must be (low, high) with 0 < low <= "
                             f"high <= 1; received scale={scale!r}.")
        if not (0 < ratio[0] <= ratio[1]):
            raise ValueError(f"RandomResizedCrop: ratio must be (low, high) with 0 < low <= "
                             f"high; received ratio={ratio!r}.")
        self.scale, self.ratio = tuple(scale), tuple(ratio)

    def apply(self, images, rng):
        n, h, w = images.shape[:3]
        area = rng.uniform(*self.scale, n) * h * w
        aspect = np.exp(rng.uniform(math.log(self.ratio[0]), math.log(self.ratio[1]), n))
        width = np.clip(np.sqrt(area * aspect), 1, w)
        height = np.clip(np.sqrt(area / aspect), 1, h)
        top = rng.random(n) * (h - height)
        left = rng.random(n) * (w - width)
        return _bilinear(images, top, left, height, width, self.size)

    def deterministic(self) -> Transform:
        return Resize(self.size)
