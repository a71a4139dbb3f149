"""Shapes: coloured geometric shapes drawn with pillow, an offline image set for the zoo."""

from __future__ import annotations

import math

import numpy as np
from PIL import Image, ImageDraw

from .dataset import Dataset, Normalize, _in_memory, _options_doc

__all__ = ["Shapes"]

CLASS_NAMES = ("circle", "ring", "triangle", "square", "pentagon", "star", "cross", "crescent")
_SUPERSAMPLING = 4  # draw at 4x and shrink: anti-aliased edges, as a camera would see them


class Shapes(Dataset):
    __doc__ = (
        """Colour images of eight kinds of shape, drawn deterministically with pillow.

    Each image holds one shape (circle, ring, triangle, square, pentagon, star,
    cross or crescent) of a random colour, size, position and rotation on a
    random background of another colour, with mild pixel noise. The images are
    drawn when the data set is made, from ``data_seed`` alone, so every machine
    sees the same pictures; nothing is downloaded. It is small enough to train
    a CIFAR-style ResNet on a CPU in minutes, and hard enough that the
    architecture matters (a linear model stays well below a small ConvNet).

    Parameters
    ----------
    batch_size : int
        Examples per batch.
    image_size : int
        Height and width in pixels (at least 8; 32 matches CIFAR).
    training_size, validation_size : int
        Number of images in each split (classes are balanced: example ``i``
        is of class ``i % 8`` before shuffling).
    data_seed : int
        Seeds the drawing; the validation split uses draws the training split
        never saw.
"""
        + _options_doc(standard="by the training split's mean and standard deviation")
        + """
    Examples
    --------
    >>> from s4tf import datasets
    >>> shapes = datasets.Shapes(batch_size=16, training_size=64, validation_size=16, seed=0)
    >>> images, labels = next(iter(shapes.training))
    >>> images.shape, labels.shape
    ((16, 32, 32, 3), (16,))
    >>> shapes.class_names[:3]
    ('circle', 'ring', 'triangle')
"""
    )

    def __init__(
        self,
        batch_size: int = 128,
        *,
        image_size: int = 32,
        training_size: int = 8000,
        validation_size: int = 1000,
        data_seed: int = 0,
        normalize: Normalize = False,
        seed: int | None = None,
        drop_remainder: bool = False,
        prefetch: bool = True,
        transform=None,
        validation_transform=None,
    ):
        if isinstance(image_size, bool) or not isinstance(image_size, int) or image_size < 8:
            raise ValueError(f"Shapes: image_size must be an int >= 8, got {image_size!r}.")
        for name, count in (("training_size", training_size),
                            ("validation_size", validation_size)):
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise ValueError(f"Shapes: {name} must be a positive int, got {count!r}.")
        # Two independent streams, so that growing one split never changes the other.
        streams = np.random.SeedSequence(data_seed).spawn(2)
        _in_memory(
            self,
            training=draw_shapes(training_size, image_size, np.random.default_rng(streams[0])),
            validation=draw_shapes(validation_size, image_size,
                                   np.random.default_rng(streams[1])),
            maximum=255,
            class_names=CLASS_NAMES,
            batch_size=batch_size,
            normalize=normalize,
            seed=seed,
            drop_remainder=drop_remainder,
            prefetch=prefetch,
            transform=transform,
            validation_transform=validation_transform,
        )


def draw_shapes(count: int, image_size: int,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``count`` uint8 ``(image_size, image_size, 3)`` images and their int32 labels."""
    images = np.empty((count, image_size, image_size, 3), np.uint8)
    labels = (np.arange(count) % len(CLASS_NAMES)).astype(np.int32)
    for i, label in enumerate(labels):
        images[i] = _draw_one(int(label), image_size, rng)
    return images, labels


def _draw_one(label: int, image_size: int, rng: np.random.Generator) -> np.ndarray:
    size = image_size * _SUPERSAMPLING
    background, foreground = _contrasting_colours(rng)
    image = Image.new("RGB", (size, size), background)
    draw = ImageDraw.Draw(image)
    radius = size * rng.uniform(0.22, 0.4)
    centre = rng.uniform(radius, size - radius, 2)
    angle = rng.uniform(0.0, 2.0 * math.pi)
    _SHAPES[CLASS_NAMES[label]](draw, centre, radius, angle, foreground, background)
    small = image.resize((image_size, image_size), Image.Resampling.BOX)
    noisy = np.asarray(small, np.float32) + rng.normal(0.0, 6.0, (image_size, image_size, 3))
    return np.clip(noisy, 0, 255).astype(np.uint8)


def _contrasting_colours(rng: np.random.Generator) -> tuple[tuple, tuple]:
    while True:
        background, foreground = rng.integers(0, 256, (2, 3))
        # Rec. 601 luma: keep the shape visible to a grey-scale eye too.
        luma = np.array([0.299, 0.587, 0.114])
        if abs(float(luma @ (background - foreground))) > 60:
            return tuple(int(v) for v in background), tuple(int(v) for v in foreground)


def _polygon(centre, radius, angle, corners, inner=None):
    points = []
    for k in range(corners * (2 if inner else 1)):
        r = radius if inner is None or k % 2 == 0 else radius * inner
        theta = angle + k * math.pi / (corners if inner else corners / 2)
        points.append((centre[0] + r * math.cos(theta), centre[1] + r * math.sin(theta)))
    return points


def _box(centre, radius):
    return [centre[0] - radius, centre[1] - radius, centre[0] + radius, centre[1] + radius]


def _circle(draw, centre, radius, angle, colour, background):
    draw.ellipse(_box(centre, radius), fill=colour)


def _ring(draw, centre, radius, angle, colour, background):
    draw.ellipse(_box(centre, radius), outline=colour, width=max(2, int(radius * 0.3)))


def _regular(corners):
    def draw_polygon(draw, centre, radius, angle, colour, background):
        draw.polygon(_polygon(centre, radius, angle, corners), fill=colour)
    return draw_polygon


def _star(draw, centre, radius, angle, colour, background):
    draw.polygon(_polygon(centre, radius, angle, 5, inner=0.45), fill=colour)


def _cross(draw, centre, radius, angle, colour, background):
    arm = radius * 0.3
    outline = [(-arm, -radius), (arm, -radius), (arm, -arm), (radius, -arm), (radius, arm),
               (arm, arm), (arm, radius), (-arm, radius), (-arm, arm), (-radius, arm),
               (-radius, -arm), (-arm, -arm)]
    cos, sin = math.cos(angle), math.sin(angle)
    draw.polygon([(centre[0] + x * cos - y * sin, centre[1] + x * sin + y * cos)
                  for x, y in outline], fill=colour)


def _crescent(draw, centre, radius, angle, colour, background):
    draw.ellipse(_box(centre, radius), fill=colour)
    offset = (centre[0] + 0.45 * radius * math.cos(angle), centre[1] + 0.45 * radius * math.sin(angle))
    draw.ellipse(_box(offset, radius * 0.85), fill=background)


_SHAPES = {
    "circle": _circle, "ring": _ring, "triangle": _regular(3), "square": _regular(4),
    "pentagon": _regular(5), "star": _star, "cross": _cross, "crescent": _crescent,
}
