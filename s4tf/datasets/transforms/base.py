"""The transform protocol: :class:`Transform`, :class:`Compose` and what validation gets."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["Compose", "Transform", "validation_transform"]


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


def size_pair(value, owner: str, name: str) -> tuple[int, int]:
    """``value`` as a ``(height, width)`` pair of positive ints; ``owner`` and ``name`` word the error."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (value, value)
    if (isinstance(value, (tuple, list)) and len(value) == 2
            and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v > 0
                    for v in value)):
        return int(value[0]), int(value[1])
    raise ValueError(f"{owner}: {name} must be a positive int or a (height, width) pair of "
                     f"them; received {name}={value!r}.")
