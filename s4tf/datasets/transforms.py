"""Data augmentation and preprocessing on NumPy image batches (NHWC), or one image (HWC).

Every transform works on a whole batch at once: crops are strided views
gathered in one copy, flips one masked copy, resizes one vectorised bilinear
gather, with no Python loop over the images; so augmenting keeps up with
training on one core (``benchmarks/augmentation.py``). The same object
applies to a single ``(height, width, channels)`` image, which makes the
training preprocessing reusable at inference::

    augment = transforms.Compose([transforms.RandomCrop(32, padding=4),
                                  transforms.RandomFlip(),
                                  transforms.Normalize(mean, std)])
    data = datasets.Batches.from_arrays(x, y, batch_size=128, shuffle=True,
                                        transform=augment)
    preprocess = augment.deterministic()      # only Normalize is left
    logits = model(s4tf.Tensor(preprocess(image)[None]))

Randomness: a transform made with ``seed=n`` draws from its own stream
started from ``n``, so two runs see the same augmentations in the same order
and successive calls (epochs) differ; ``seed=None`` starts the stream from
fresh entropy, as :class:`~s4tf.datasets.Batches` does for its shuffle.
Inside :class:`~s4tf.datasets.Batches`, a transform is handed a generator
made from the Batches' seed, the epoch and the batch's index instead, so a
resumed run augments exactly as the uninterrupted one and the prefetch
thread never touches a shared stream.

Transforms expect float images in ``[0, 1]`` (what the data sets give unless
``normalize=`` says otherwise; for a picture of your own,
``np.asarray(pil_image, np.float32) / 255``); put :class:`Normalize` last.
Crops and flips keep the dtype, so they also work on stored uint8 images.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = [
    "CenterCrop", "ColorJitter", "Compose", "Normalize", "RandomCrop", "RandomFlip",
    "RandomResizedCrop", "Resize", "Transform", "validation_transform",
]


class Transform:
    """Base class: ``transform(images, rng=None)`` on a NHWC batch or one HWC image.

    Subclasses write :meth:`apply` for a batch; the base adds the single-image
    case and picks the random generator. A random transform also overrides
    :meth:`deterministic`, its inference counterpart.

    Examples
    --------
    >>> import numpy as np
    >>> from s4tf.datasets import transforms
    >>> class Invert(transforms.Transform):
    ...     def apply(self, images, rng):
    ...         return 1.0 - images
    >>> float(Invert()(np.zeros((2, 4, 4, 1), np.float32)).mean())
    1.0
    """

    random = False  # whether apply draws from rng

    def __init__(self, seed: int | None = None):
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))
                                 or seed < 0):
            raise ValueError(f"{type(self).__name__}: seed must be a non-negative int or None; "
                             f"received seed={seed!r}.")
        self.seed = seed
        self._stream = np.random.default_rng(None if seed is None else int(seed))

    def __call__(self, images, *, rng: np.random.Generator | None = None) -> np.ndarray:
        """``images`` transformed: a ``(batch, h, w, c)`` batch or one ``(h, w, c)`` image."""
        array = np.asarray(images)
        if array.ndim not in (3, 4):
            raise ValueError(
                f"{type(self).__name__} takes a batch of images (batch, height, width, "
                f"channels) or one image (height, width, channels); received an array of "
                f"shape {array.shape}. Add a channel axis to greyscale images: "
                "images[..., None].")
        single = array.ndim == 3
        if rng is None:
            rng = self._stream
        out = self.apply(array[np.newaxis] if single else array, rng)
        return out[0] if single else out

    def apply(self, images: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Transform a NHWC batch, drawing any randomness from ``rng``."""
        raise NotImplementedError(f"{type(self).__name__} must define apply(images, rng).")

    def deterministic(self) -> Transform | None:
        """The transform to use at inference (``None``: nothing); ``self`` when not random.

        Examples
        --------
        >>> from s4tf.datasets import transforms
        >>> transforms.RandomFlip().deterministic() is None
        True
        >>> n = transforms.Normalize(0.5, 0.25)
        >>> n.deterministic() is n
        True
        """
        return None if self.random else self

    def __repr__(self) -> str:
        shown = {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in vars(self).items()
                 if not k.startswith("_") and k != "random" and not (k == "seed" and v is None)}
        fields = ", ".join(f"{k}={v!r}" for k, v in shown.items())
        return f"{type(self).__name__}({fields})"


class Compose(Transform):
    """Apply ``transforms`` in order (each gets the same generator, drawn in turn).

    A plain function among them (``lambda images: images ** 0.5``) is taken as
    deterministic preprocessing: kept by :meth:`deterministic`. Write random
    augmentations as :class:`Transform` subclasses with ``random = True``.

    Examples
    --------
    >>> import numpy as np
    >>> from s4tf.datasets import transforms
    >>> augment = transforms.Compose([transforms.RandomCrop(32, padding=4, seed=0),
    ...                               transforms.RandomFlip(seed=0),
    ...                               transforms.Normalize(0.5, 0.25)])
    >>> augment(np.zeros((8, 32, 32, 3), np.float32)).shape
    (8, 32, 32, 3)
    >>> augment.deterministic()   # what validation and inference use
    Compose(transforms=[CenterCrop(size=(32, 32), skip_if_smaller=True), Normalize(mean=[0.5], std=[0.25])])
    """

    def __init__(self, transforms: Sequence, seed: int | None = None):
        super().__init__(seed)
        self.transforms = list(transforms)
        for t in self.transforms:
            if not callable(t):
                raise TypeError(f"Compose takes transforms (callables on image arrays); "
                                f"received {t!r}.")
        self.random = any(isinstance(t, Transform) and t.random for t in self.transforms)

    def apply(self, images, rng):
        for t in self.transforms:
            images = t.apply(images, rng) if isinstance(t, Transform) else np.asarray(t(images))
        return images

    def deterministic(self) -> Compose:
        kept = []
        for t in self.transforms:
            part = t.deterministic() if isinstance(t, Transform) else t
            if part is not None:
                kept.append(part)
        return Compose(kept)


def _pair(value, owner: str, name: str) -> tuple[int, int]:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (value, value)
    if (isinstance(value, (tuple, list)) and len(value) == 2
            and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v > 0
                    for v in value)):
        return int(value[0]), int(value[1])
    raise ValueError(f"{owner}: {name} must be a positive int or a (height, width) pair of "
                     f"them; received {name}={value!r}.")


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
        self.size = _pair(size, "RandomCrop", "size")
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
        self.size = _pair(size, "CenterCrop", "size")
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
            self.size = _pair(size, "Resize", "size")

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
        self.size = _pair(size, "RandomResizedCrop", "size")
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


def validation_transform(transform, given=None):
    """What validation batches get when training batches get ``transform``.

    ``given`` when not None; else the deterministic part of an s4tf
    ``transform`` (:meth:`Transform.deterministic`: crops become centre crops,
    flips and jitter go, :class:`Normalize` stays); a plain function is taken
    as deterministic preprocessing and applied to validation too.

    Examples
    --------
    >>> from s4tf.datasets import transforms
    >>> transforms.validation_transform(transforms.RandomFlip()) is None
    True
    >>> transforms.validation_transform(transforms.Normalize(0.5, 0.5))
    Normalize(mean=[0.5], std=[0.5])
    """
    if given is not None:
        return given
    if isinstance(transform, Transform):
        return transform.deterministic()
    return transform
