"""Pooling kernels over an array namespace ``xp``: max pooling, window sums and their transposes.

A mixin of :class:`s4tf.backends.nn_kernels.NNKernels` (same conventions:
channels-last data, one ``(before, after)`` padding pair per spatial axis,
static keyword arguments). Each kernel loops over the few window offsets,
never over pixels; each step is one vectorized operation on strided views,
over a batch chunk small enough to stay in cache from one offset to the next.
The eager kernels never copy the input into a padded buffer: for each offset
they work on the box of outputs whose window element is inside the input
(:func:`~s4tf.backends.windows.offset_boxes`), which is what padding with the
neutral value (the lowest number for maxima, zero for sums) would give. When
the windows tile the input (a stride equal to the window, as in LeNet's 2x2
pools), the transposes assign each element once instead of adding into a
zeroed buffer.

Max pooling's ties follow TF's MaxPoolGrad: the gradient goes to the *first*
maximum of each window, in offset order.

Replaying on ``jax.numpy``: :meth:`PoolKernels.max_pool_select` is purely
functional; the other kernels write into buffers they allocated, and the xla
backend overrides them (``backends/xla/nn_kernels.py``).
"""

from __future__ import annotations

import numpy as np

from ..dtypes import as_dtype
from .im2col import chunks
from .windows import (
    conv_output_shape,
    covers_once,
    full_key,
    offset_boxes,
    offset_keys,
    padded_shape,
    size,
)

__all__ = ["PoolKernels"]


class PoolKernels:
    """Max-pooling and window-sum kernels; ``self.xp`` is the array module."""

    def _pool_geometry(self, shape, window, strides, padding):
        """``(out_spatial, boxes)`` for an undilated window over an input of ``shape``."""
        ones = (1,) * len(window)
        out_spatial = conv_output_shape(padded_shape(shape[1:-1], padding), window, strides, ones)
        boxes = offset_boxes(shape[1:-1], window, strides, ones, padding, out_spatial)
        return out_spatial, [box for box in boxes if box is not None]

    def _lowest(self, dtype):
        if as_dtype(dtype).is_floating:  # bfloat16 (ml_dtypes) has NumPy kind "V", not "f"
            return -np.inf
        return self.xp.iinfo(dtype).min

    @staticmethod
    def _chunks(shape, itemsize):
        """Image ranges of about :data:`im2col.CHUNK_BYTES` of input each.

        Each window offset's pass over a chunk finds it still in cache from the
        pass before, instead of reading the whole batch from memory again.
        """
        return chunks(shape[0], size(shape[1:]) * itemsize)

    def _fold(self, x, window, strides, padding, ufunc, neutral):
        """``ufunc`` folded over each window of ``x``; padding counts as ``neutral``."""
        out_spatial, boxes = self._pool_geometry(x.shape, window, strides, padding)
        out = self.xp.empty((x.shape[0],) + out_spatial + (x.shape[-1],), dtype=x.dtype)
        whole = [box for box in boxes if all(
            s.start == 0 and s.stop == n for s, n in zip(box[0], out_spatial, strict=True))]
        first = whole[0] if whole else None  # an offset every window reads inside the input
        for start, stop in self._chunks(x.shape, x.itemsize):
            images, folded = x[start:stop], out[start:stop]
            if first is None:
                folded.fill(neutral)
            else:
                folded[...] = images[full_key(first[1])]
            for box in boxes:
                if box is not first:
                    region = folded[full_key(box[0])]
                    ufunc(region, images[full_key(box[1])], out=region)
        return out

    def _spread(self, g, input_shape, window, strides, padding, pieces):
        """An ``input_shape`` array with ``pieces`` added into the input box of each offset.

        ``pieces(boxes, start, stop)`` yields, for images ``start:stop``, one
        array per offset box (in order), shaped as that box's outputs. Windows
        that tile the input assign instead of adding.
        """
        out_spatial, boxes = self._pool_geometry(input_shape, window, strides, padding)
        tiles = covers_once(input_shape[1:-1], window, strides, padding, out_spatial)
        disjoint = all(s >= k for s, k in zip(strides, window, strict=True))
        dx = (self.xp.empty if tiles else self.xp.zeros)(input_shape, dtype=g.dtype)
        for start, stop in self._chunks(input_shape, g.itemsize):
            spread = dx[start:stop]
            for (_, in_key), piece in zip(boxes, pieces(boxes, start, stop), strict=True):
                if disjoint:
                    spread[full_key(in_key)] = piece
                else:
                    region = spread[full_key(in_key)]
                    self.xp.add(region, piece, out=region)
        return dx

    # Max pooling -------------------------------------------------------------

    def max_pool(self, x, *, window, strides, padding):
        """Maximum over each window of ``x`` (``(N, *S, C)``) padded with the lowest value.

        Returns ``(N, *out, C)`` with ``out`` as for a convolution without dilation.
        """
        return self._fold(x, window, strides, padding, self.xp.maximum, self._lowest(x.dtype))

    def _pad_spatial(self, x, padding, value):
        """``x`` padded on its spatial axes; ``x`` itself when there is no padding."""
        if not any(lo or hi for lo, hi in padding):
            return x
        pads = ((0, 0),) + tuple(padding) + ((0, 0),)
        return self.xp.pad(x, pads, constant_values=value)

    def max_pool_select(self, x, v, *, window, strides, padding):
        """For each window, ``v`` at the position of the first maximum of ``x`` there.

        ``x``, ``v``: ``(N, *S, C)``; returns ``(N, *out, C)``. Max-pooling's JVP
        (``v`` a tangent) and the transpose of :meth:`max_pool_scatter`. Purely
        functional (padded copies, masks and products), so the xla backend
        replays it on ``jax.numpy`` as it is.
        """
        xpad = self._pad_spatial(x, padding, self._lowest(x.dtype))
        vpad = self._pad_spatial(v, padding, 0)
        out_spatial = conv_output_shape(xpad.shape[1:-1], window, strides, (1,) * len(window))
        keys = offset_keys(window, strides, (1,) * len(window), out_spatial)
        pieces = [xpad[full_key(key)] for key in keys]
        best = pieces[0]
        for piece in pieces[1:]:
            best = self.xp.maximum(best, piece)
        chosen, taken = None, None
        for piece, key in zip(pieces, keys, strict=True):
            hit = piece == best
            if taken is None:
                taken = hit
            else:  # only the first maximum of each window: masks and products, no ``where``
                hit = hit & ~taken
                taken = taken | hit
            term = vpad[full_key(key)] * hit
            chosen = term if chosen is None else chosen + term
        return chosen

    def max_pool_scatter(self, x, g, *, window, strides, padding):
        """Transpose of :meth:`max_pool_select` in ``v``: max-pooling's VJP.

        ``x``: ``(N, *S, C)``; ``g``: ``(N, *out, C)``; returns ``x``'s shape,
        each ``g`` added at the first maximum of ``x`` in its window.
        """
        xp = self.xp

        def pieces(boxes, start, stop):
            images, grads = x[start:stop], g[start:stop]
            best = self.max_pool(images, window=window, strides=strides, padding=padding)
            # Scratch for every offset's mask and product (new arrays each time would
            # be fresh pages for the kernel to fault in, offset after offset).
            taken, hits = xp.zeros(best.shape, dtype=bool), xp.empty(best.shape, dtype=bool)
            products = xp.empty(best.shape, dtype=g.dtype)
            for out_key, in_key in boxes:
                key = full_key(out_key)
                hit, seen, product = hits[key], taken[key], products[key]
                xp.equal(images[full_key(in_key)], best[key], out=hit)
                xp.greater(hit, seen, out=hit)  # hit and not seen: the first maximum only
                xp.logical_or(seen, hit, out=seen)
                xp.multiply(grads[key], hit, out=product)
                yield product  # used before the next offset overwrites it

        return self._spread(g, x.shape, window, strides, padding, pieces)

    # Window sums (average pooling) -------------------------------------------

    def window_sum(self, x, *, window, strides, padding):
        """Sum over each window of ``x`` (``(N, *S, C)``) zero-padded; ``(N, *out, C)``.

        Average pooling divides this by the count of real (unpadded) elements.
        """
        return self._fold(x, window, strides, padding, self.xp.add, 0)

    def window_sum_transpose(self, g, *, input_shape, window, strides, padding):
        """Transpose of :meth:`window_sum`: each ``g`` added to every element of its window.

        ``g``: ``(N, *out, C)``; returns an array of ``input_shape``.
        """
        def pieces(boxes, start, stop):
            return (g[start:stop][full_key(out_key)] for out_key, _ in boxes)

        return self._spread(g, input_shape, window, strides, padding, pieces)
