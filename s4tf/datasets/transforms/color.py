"""Colour: random jitter (brightness, contrast, saturation, hue) and per-channel normalisation."""

from __future__ import annotations

import math

import numpy as np

from .base import Transform

__all__ = ["ColorJitter", "Normalize"]


_LUMA = np.array([0.299, 0.587, 0.114], np.float32)


class ColorJitter(Transform):
    """Random brightness, contrast, saturation and hue, per image, in that order.

    Each factor is drawn uniformly from ``[1 - amount, 1 + amount]``
    (``hue``: a rotation of ``[-hue, hue]`` turns of the colour wheel, at most
    0.5); results are clipped to ``[0, 1]``, so apply it before
    :class:`Normalize`. Saturation and hue need RGB images.

    Examples
    --------
    >>> import numpy as np
    >>> from s4tf.datasets import transforms
    >>> jitter = transforms.ColorJitter(brightness=0.4, contrast=0.4, saturation=0.4, seed=0)
    >>> out = jitter(np.full((4, 8, 8, 3), 0.5, np.float32))
    >>> out.shape, bool(out.min() >= 0 and out.max() <= 1)
    ((4, 8, 8, 3), True)
    """

    random = True

    def __init__(self, brightness: float = 0.0, contrast: float = 0.0, saturation: float = 0.0,
                 hue: float = 0.0, *, seed: int | None = None):
        super().__init__(seed)
        for name, value, top in (("brightness", brightness, math.inf),
                                 ("contrast", contrast, math.inf),
                                 ("saturation", saturation, math.inf), ("hue", hue, 0.5)):
            if not 0 <= value <= top:
                raise ValueError(f"ColorJitter: {name} must lie in [0, {top}]; received "
                                 f"{name}={value!r}.")
        self.brightness, self.contrast = brightness, contrast
        self.saturation, self.hue = saturation, hue

    def apply(self, images, rng):
        n, channels = len(images), images.shape[-1]
        if images.dtype.kind != "f":
            raise TypeError(f"ColorJitter works on float images in [0, 1]; received {images.dtype} "
                            "images. Scale them first (images.astype(np.float32) / 255).")
        if (self.saturation or self.hue) and channels != 3:
            raise ValueError(f"ColorJitter: saturation and hue need RGB images (3 channels); "
                             f"received {channels}.")
        out = images.astype(np.float32)  # a copy: the input is never written

        def factors(amount):
            return rng.uniform(max(0.0, 1 - amount), 1 + amount, n).astype(np.float32)[
                :, None, None, None]

        if self.brightness:
            out *= factors(self.brightness)
        if self.contrast:
            grey = out @ _LUMA if channels == 3 else out[..., 0]
            mean = grey.mean(axis=(1, 2))[:, None, None, None]
            out -= mean
            out *= factors(self.contrast)
            out += mean
        if self.saturation:
            grey = (out @ _LUMA)[..., None]
            out -= grey
            out *= factors(self.saturation)
            out += grey
        if self.hue:
            out = _rotate_hue(out, rng.uniform(-self.hue, self.hue, n) * 2 * math.pi)
        return np.clip(out, 0.0, 1.0, out=out)


def _rotate_hue(images: np.ndarray, angles: np.ndarray) -> np.ndarray:
    """Rotate each image's chroma by its angle in YIQ space (luma kept)."""
    to_yiq = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.322],
                       [0.211, -0.523, 0.312]], np.float32)
    to_rgb = np.linalg.inv(to_yiq).astype(np.float32)
    cos, sin = np.cos(angles), np.sin(angles)
    rotation = np.zeros((len(angles), 3, 3), np.float32)
    rotation[:, 0, 0] = 1
    rotation[:, 1, 1], rotation[:, 1, 2] = cos, -sin
    rotation[:, 2, 1], rotation[:, 2, 2] = sin, cos
    matrices = to_rgb @ rotation @ to_yiq  # (n, 3, 3): rgb -> rgb
    return np.einsum("nhwc,ndc->nhwd", images, matrices, optimize=True).astype(np.float32)


class Normalize(Transform):
    """``(image - mean) / std`` per channel, as float32.

    Examples
    --------
    >>> import numpy as np
    >>> from s4tf.datasets import transforms
    >>> transforms.Normalize([0.5, 0.5], [0.5, 0.25])(np.ones((1, 1, 2), np.float32)).tolist()
    [[[1.0, 2.0]]]
    """

    def __init__(self, mean, std):
        super().__init__()
        self.mean = np.asarray(mean, np.float32).reshape(-1)
        self.std = np.asarray(std, np.float32).reshape(-1)
        if np.any(self.std <= 0):
            raise ValueError(f"Normalize: std must be positive (it divides the images); "
                             f"received std={std!r}.")

    def apply(self, images, rng):
        channels = images.shape[-1]
        for name, value in (("mean", self.mean), ("std", self.std)):
            if value.size not in (1, channels):
                raise ValueError(f"Normalize: {name} has {value.size} values but the images "
                                 f"have {channels} channels; give one value or one per channel.")
        out = images.astype(np.float32)
        out -= self.mean
        out /= self.std
        return out
