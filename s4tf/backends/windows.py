"""Window geometry for the convolution and pooling kernels: output shapes and per-offset slices.

A window of ``window`` elements, ``dilations`` apart, slides over the
``padding``-extended input in steps of ``strides``; every spatial axis is
independent. Kernels loop over the window's offsets (row-major, the order of
a HWIO filter's leading axes), never over pixels: for each offset, the
slices here pick out, as strided views, which outputs it touches and which
input elements it reads.

Examples
--------
>>> conv_output_shape((6,), (3,), (2,), (1,))
(2,)
>>> offset_keys((2,), (2,), (1,), (3,))
[(slice(0, 5, 2),), (slice(1, 6, 2),)]
>>> offset_boxes((4,), (3,), (1,), (1,), ((1, 1),), (4,))[0]
((slice(1, 4, None),), (slice(0, 3, 1),))
"""

from __future__ import annotations

import itertools
import math

__all__ = ["conv_output_shape", "covers_once", "full_key", "offset_boxes", "offset_keys",
           "padded_shape", "size"]


def conv_output_shape(padded, window, strides, dilations) -> tuple[int, ...]:
    """Spatial output shape of a window of ``window`` (dilated) over ``padded`` sizes."""
    return tuple(
        (n - ((k - 1) * d + 1)) // s + 1
        for n, k, s, d in zip(padded, window, strides, dilations, strict=True)
    )


def padded_shape(spatial, padding) -> tuple[int, ...]:
    """``spatial`` sizes with ``(before, after)`` padding added."""
    return tuple(n + lo + hi for n, (lo, hi) in zip(spatial, padding, strict=True))


def size(shape) -> int:
    """The number of elements of ``shape`` (1 for ``()``)."""
    return math.prod(shape)


def full_key(spatial_key) -> tuple[slice, ...]:
    """The index ``(all images, *spatial_key, all channels)`` of channels-last data."""
    return (slice(None),) + tuple(spatial_key) + (slice(None),)


def _offsets(window):
    return itertools.product(*(range(n) for n in window))


def offset_keys(window, strides, dilations, out_spatial) -> list[tuple[slice, ...]]:
    """For each window offset, its spatial slices of the *padded* input.

    ``padded[(..., *key, ...)]`` holds, for every output pixel ``o``, the input
    element at ``o * strides + offset * dilations``.
    """
    return [
        tuple(slice(i * d, i * d + s * (o - 1) + 1, s)
              for i, s, d, o in zip(k, strides, dilations, out_spatial, strict=True))
        for k in _offsets(window)
    ]


def offset_boxes(spatial, window, strides, dilations, padding, out_spatial):
    """For each window offset, ``(out_key, in_key)``: the part that reads the unpadded input.

    ``out[(..., *out_key, ...)]`` are the outputs whose window element at that
    offset lies inside the input (not in the padding), and ``x[(..., *in_key,
    ...)]`` those elements, in the same order. An offset that reads only
    padding gives ``None``. Kernels that loop over these never copy the input
    into a padded buffer: the padding's contribution (zero for sums, nothing
    for maxima) is left out instead.
    """
    boxes = []
    for k in _offsets(window):
        out_key, in_key = [], []
        for i, n, s, d, (lo, _), o in zip(k, spatial, strides, dilations, padding, out_spatial,
                                          strict=True):
            shift = i * d - lo  # input index read by output 0
            first, last = max(0, -(shift // s)), min(o - 1, (n - 1 - shift) // s)
            if first > last:
                break
            out_key.append(slice(first, last + 1))
            in_key.append(slice(first * s + shift, last * s + shift + 1, s))
        boxes.append((tuple(out_key), tuple(in_key)) if len(out_key) == len(k) else None)
    return boxes


def covers_once(spatial, window, strides, padding, out_spatial) -> bool:
    """Whether the windows (undilated) tile the input: every element in exactly one window."""
    return all(s == k and o * s == n + lo + hi
               for n, k, s, (lo, hi), o in zip(spatial, window, strides, padding, out_spatial,
                                               strict=True))
