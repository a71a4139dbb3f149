"""im2col blocks over an array namespace ``xp``, for the convolution kernels.

im2col turns a convolution into a GEMM: one row per output pixel, one column
per (window offset, input channel), each entry the input under that offset.
The blocks are copied from strided *views* of the input, a batch chunk at a
time, into one buffer reused for every chunk (so it stays in cache and is not
allocated again), in one of three layouts:

* pixel-major, ``(pixels, offsets * channels)``: one copy of the view
  ``(images, *out, *window, channels)`` of the channels-last input. The copy
  moves runs of ``window[-1] * channels`` numbers: long for many channels.
* offset-major, ``(groups, offsets * channels // groups, pixels)``: one slab
  copy per window offset from a channels-first copy of the input, moving runs
  of a whole output row: best for few channels, and each channel group's
  columns are one matrix.
* rows (:func:`rows`, 2-D only): the window's last axis only, for every
  padded input row, so that a convolution with unit stride down the image is
  one GEMM per filter row over shifted slices: a third of the copying (3x3).

Examples
--------
>>> import numpy as np
>>> x = np.arange(32.0).reshape(1, 4, 4, 2)  # channels 0 and 1 of pixel p: 2p and 2p + 1
>>> [(start, stop, cols)] = columns(np, x, (3, 3), (2, 2), (1, 1), ((0, 0), (0, 0)), (1, 1), 1)
>>> cols.shape, cols[0, :, 0].tolist()  # output pixel 0 reads pixels 0, 1, 4, 5
((1, 8, 9), [0.0, 1.0, 2.0, 3.0, 8.0, 9.0, 10.0, 11.0])
>>> [(start, stop, cols)] = columns(np, x, (3, 3), (2, 2), (1, 1), ((0, 0), (0, 0)), (1, 1), 2)
>>> cols.shape, cols[1, :, 0].tolist()  # group 1 is channel 1
((2, 4, 9), [1.0, 3.0, 9.0, 11.0])
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np

from .windows import offset_keys, size

__all__ = ["CHUNK_BYTES", "by_rows", "chunks", "column_chunks", "columns", "no_copy",
           "offset_major", "row_chunks", "rows"]

#: Target size of one im2col block: a fraction of a core's L2 cache (1-2 MiB on
#: today's CPUs), so the block, its GEMM's other operands and its output stay
#: there together. 512 KiB measured at least as fast as 1 MiB on every shape of
#: benchmarks/conv.py (2 MiB L2), and faster on most.
CHUNK_BYTES = 1 << 19

#: The largest im2col buffer a thread keeps between calls (see ``_buffer``): a block
#: is about :data:`CHUNK_BYTES`, or one image's columns when those are more.
KEPT_BYTES = 8 * CHUNK_BYTES

#: Channels-last rows shorter than this many bytes per pixel copy faster offset-major.
OFFSET_MAJOR_BELOW_BYTES = 16

_scratch = threading.local()  # each thread's im2col buffer (see _buffer)


def chunks(batch: int, bytes_per_image: int) -> list[tuple[int, int]]:
    """``(start, stop)`` image ranges whose columns take about :data:`CHUNK_BYTES` each."""
    step = max(1, min(batch, CHUNK_BYTES // max(bytes_per_image, 1)))
    return [(start, min(start + step, batch)) for start in range(0, batch, step)]


def columns(xp, x, out_spatial, window, strides, padding, dilations, groups, parts=None):
    """im2col of ``x`` (``(N, *S, C)``) in batch chunks: yields ``(start, stop, cols)``.

    ``cols`` is ``(groups, window_size * C // groups, rows)``, rows being the
    output pixels of images ``start:stop``; its second axis is ordered (window
    offset, channel) like a HWIO filter reshaped to 2-D, so group ``g``'s
    columns are the matrix ``cols[g]`` (a transposed view for the pixel-major
    layout). The block is overwritten by the next one: use it first. A 1x1
    window with unit strides and no padding needs no copy: its columns are
    ``x`` itself, in one block. ``parts``, the chunks to yield, defaults to
    :func:`column_chunks` (a share of them lets each thread have its own buffer).
    """
    channels = x.shape[-1]
    if no_copy(x, window, strides, padding, groups):
        if parts is None or parts:
            yield 0, x.shape[0], x.reshape(-1, channels).T[None]
        return
    if parts is None:
        parts = column_chunks(x, out_spatial, window)
    if groups == 1 and not offset_major(channels, x.itemsize):
        blocks = (cols.T[None] for cols in _pixel_major(
            xp, x, out_spatial, window, strides, padding, dilations, parts))
    else:
        blocks = _offset_major(xp, x, out_spatial, window, strides, padding, dilations, groups,
                               parts)
    for (start, stop), cols in zip(parts, blocks, strict=True):
        yield start, stop, cols


def no_copy(x, window, strides, padding, groups) -> bool:
    """Whether :func:`columns` of ``x`` is ``x`` itself (1x1 window, unit strides, no padding)."""
    return groups == 1 and size(window) == 1 and all(s == 1 for s in strides) and not any(
        lo or hi for lo, hi in padding)


def column_chunks(x, out_spatial, window) -> list[tuple[int, int]]:
    """The batch chunks of :func:`columns` of ``x``."""
    return chunks(x.shape[0], size(out_spatial) * size(window) * x.shape[-1] * x.itemsize)


def row_chunks(x, out_spatial, window, padding) -> list[tuple[int, int]]:
    """The batch chunks of :func:`rows` of ``x``."""
    height = x.shape[1] + sum(padding[0])
    return chunks(x.shape[0], height * out_spatial[1] * window[1] * x.shape[-1] * x.itemsize)


def offset_major(channels: int, itemsize: int) -> bool:
    """Whether inputs with ``channels`` channels take the offset-major layout."""
    return channels * itemsize < OFFSET_MAJOR_BELOW_BYTES


def by_rows(x, window, strides, groups) -> bool:
    """Whether a convolution of ``x`` takes the row layout of :func:`rows`.

    Two spatial axes, unit stride down the columns (the first spatial axis),
    one group, many channels, and a BLAS dtype (the kernel adds one GEMM per
    window row: exact sums in float32 and float64 only).
    """
    return (len(window) == 2 and window[0] > 1 and strides[0] == 1 and groups == 1
            and x.dtype in (np.float32, np.float64)
            and not offset_major(x.shape[-1], x.itemsize))


def rows(xp, x, out_spatial, window, strides, padding, dilations, parts=None):
    """im2col along the last spatial axis only, for 2-D inputs: yields ``(start, stop, cols)``.

    ``cols`` is ``(images * padded_height * out_width, window[1] * C)``: for
    every padded input row and output column, the window's row of elements
    (offset-major, like the filter's last two axes). Output row ``h`` and
    filter row ``i`` read its rows ``h + i * dilations[0]``: for each filter
    row, one contiguous slice per image, so a convolution is one GEMM per
    filter row on columns a third (for 3x3) the size of full im2col's.
    Each block is the same buffer, overwritten by the next one: use it first.
    ``parts`` defaults to :func:`row_chunks`.
    """
    height = x.shape[1] + sum(padding[0])
    grid, taps = (height, out_spatial[1]), (1, window[1])
    if parts is None:
        parts = row_chunks(x, out_spatial, window, padding)
    blocks = _pixel_major(xp, x, grid, taps, (1, strides[1]), padding, (1, dilations[1]), parts)
    for (start, stop), cols in zip(parts, blocks, strict=True):
        yield start, stop, cols


def _padded(xp, x, padding, channels_first):
    """``x`` zero-padded on its spatial axes: ``(N, *S', C)``, or ``(C, N, *S')``.

    A new array unless ``x`` already has the asked layout (no padding, and
    channels last or a single channel).
    """
    spatial = x.shape[1:-1]
    if not any(lo or hi for lo, hi in padding) and (not channels_first or x.shape[-1] == 1):
        return xp.moveaxis(x, -1, 0) if channels_first else x
    padded = tuple(n + lo + hi for n, (lo, hi) in zip(spatial, padding, strict=True))
    inner = tuple(slice(lo, lo + n) for (lo, _), n in zip(padding, spatial, strict=True))
    if channels_first:
        out = xp.zeros((x.shape[-1], x.shape[0]) + padded, dtype=x.dtype)
        out[(slice(None), slice(None)) + inner] = xp.moveaxis(x, -1, 0)
    else:
        out = xp.zeros((x.shape[0],) + padded + (x.shape[-1],), dtype=x.dtype)
        out[(slice(None),) + inner + (slice(None),)] = x
    return out


@contextlib.contextmanager
def _buffer(xp, shape_of, chunks, dtype):
    """One buffer for the largest chunk; ``block(n)`` is its prefix shaped for ``n`` images.

    On NumPy the calling thread's buffer is kept for its next call (grown when
    too small, up to :data:`KEPT_BYTES`): a fresh one is fresh pages, faulted
    in on first touch, which cost ~6 % of a ResNet-56 step's CPU. A thread
    whose buffer is still in use (a second column generator open at once)
    gets a new one.
    """
    largest = max((stop - start for start, stop in chunks), default=0)
    count = size(shape_of(largest))
    need = count * np.dtype(dtype).itemsize
    kept = xp is np and need <= KEPT_BYTES and not getattr(_scratch, "busy", False)
    if kept:
        if getattr(_scratch, "bytes", None) is None or _scratch.bytes.nbytes < need:
            _scratch.bytes = np.empty(need, np.uint8)
        flat = _scratch.bytes[:need].view(dtype)
        _scratch.busy = True
    else:
        flat = xp.empty(count, dtype=dtype)

    def block(n):
        shape = shape_of(n)
        return flat[:size(shape)].reshape(shape)

    try:
        yield block
    finally:
        if kept:
            _scratch.busy = False


def _pixel_major(xp, x, out_spatial, window, strides, padding, dilations, chunks):
    """Pixel-major im2col blocks ``(pixels, offsets * C)``, one per ``(start, stop)`` chunk.

    Each block is the same buffer, overwritten by the next one: use it first.
    """
    first = chunks[0][0] if chunks else 0  # pad only the images of these chunks
    xpad = xp.ascontiguousarray(_padded(xp, x[first:chunks[-1][1] if chunks else 0], padding,
                                        channels_first=False))
    steps = xpad.strides
    spatial = steps[1:-1]
    view = xp.lib.stride_tricks.as_strided(
        xpad,
        (xpad.shape[0],) + tuple(out_spatial) + tuple(window) + (xpad.shape[-1],),
        (steps[0],) + tuple(a * s for a, s in zip(spatial, strides, strict=True))
        + tuple(a * d for a, d in zip(spatial, dilations, strict=True)) + (steps[-1],),
    )
    width = size(window) * x.shape[-1]
    with _buffer(xp, lambda n: (n,) + tuple(out_spatial) + tuple(window) + (x.shape[-1],),
                 chunks, x.dtype) as block:
        for start, stop in chunks:
            cols = block(stop - start)
            xp.copyto(cols, view[start - first:stop - first])
            yield cols.reshape(-1, width)


def _offset_major(xp, x, out_spatial, window, strides, padding, dilations, groups, chunks):
    """Offset-major im2col blocks ``(groups, offsets * C // groups, pixels)``, one per chunk.

    Each block is the same buffer, overwritten by the next one: use it first.
    """
    first = chunks[0][0] if chunks else 0  # pad only the images of these chunks
    source = _padded(xp, x[first:chunks[-1][1] if chunks else 0], padding,
                     channels_first=True)  # (C, images, *padded)
    channels = x.shape[-1]
    keys = offset_keys(window, strides, dilations, out_spatial)
    grouped = (groups, channels // groups)
    with _buffer(xp, lambda n: (groups, len(keys)) + grouped[1:] + (n,) + tuple(out_spatial),
                 chunks, x.dtype) as block:
        for start, stop in chunks:
            cols = block(stop - start)
            images = source[:, start - first:stop - first]
            for tap, key in enumerate(keys):
                slab = images[(slice(None), slice(None)) + key]
                xp.copyto(cols[:, tap], slab.reshape(grouped + slab.shape[1:]))
            yield cols.reshape(groups, len(keys) * grouped[1], -1)
