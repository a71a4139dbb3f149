"""Neural-network kernels (convolution, pooling) over an array namespace ``xp``.

A mixin of :class:`s4tf.backends.array_kernels.ArrayKernels`: methods are named
after the primitives of :mod:`s4tf.ops` that use them and, like every kernel,
never write into their inputs (a few write into buffers they allocated).

Layout and parameter conventions shared by every kernel here:

* data is channels-last, ``(batch, *spatial, channels)`` with any number of
  spatial axes (1, 2 or 3 in practice);
* a convolution filter is ``(*window, in_channels // groups, out_channels)``
  (HWIO); with ``groups > 1`` input channel block ``g`` feeds output channel
  block ``g`` (depthwise convolution is ``groups == in_channels``);
* ``strides``, ``dilations``, ``window`` are tuples of ints, one per spatial
  axis; ``padding`` is a tuple of ``(before, after)`` pairs of non-negative
  ints, one per spatial axis; shapes are tuples of ints. Every keyword is
  static and hashable, so a lazy backend can key compiled code on them.

Convolutions and their gradients are im2col (:mod:`.im2col`) with one GEMM
per batch chunk of about :data:`im2col.CHUNK_BYTES` (512 KiB) of columns:
the chunk is copied from strided views of the (padded) input into one reused
buffer and multiplied while it is still in cache, which runs about twice as
fast on CPUs as one whole-batch GEMM over a matrix that has left the cache. The layout of
the columns follows the shape: pixel-major (one strided-view copy) for many
channels, offset-major (one slab copy per window offset, along whole image
rows) for few channels and for channel groups (each group's columns are one
matrix), none for a 1x1 window with unit strides (the input is its own
columns). A 2-D forward convolution with unit stride down the image copies
only the window's last axis (:func:`im2col.rows`, a third of the copying for
3x3) and adds one GEMM per filter row. Each GEMM reads its layout without a
copy (BLAS's transposed operands). The input gradient with unit strides and a
border that does not dwarf the cotangent is the forward kernel on the
cotangent with the flipped filter; otherwise it is col2im: per chunk one GEMM
(one per window offset when the pieces must be dense for their adds) and one
strided add per window offset.

Pools (:mod:`.pool_kernels`) loop over the window offsets, never over pixels.
Batch normalization's kernels are in :mod:`.norm_kernels`.

Replaying on ``jax.numpy``: ``max_pool_select`` is purely functional;
everything else here uses strided views or writes into scratch buffers, and
the xla backend overrides it (``backends/xla/nn_kernels.py``).
"""

from __future__ import annotations

import numpy as np

from . import im2col, kernel_pool
from .norm_kernels import NormKernels
from .pool_kernels import PoolKernels
from .windows import conv_output_shape, full_key, offset_keys, padded_shape, size

__all__ = ["NNKernels", "conv_output_shape"]

#: The input gradient runs as a forward convolution of the cotangent (flipped
#: filter) while its padded cotangent has at most this many times its pixels.
FLIPPED_MAX_GROWTH = 4

#: BLAS-native dtypes: GEMMs write their results straight into the output buffer.
_BLAS = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.complex64),
         np.dtype(np.complex128))


class NNKernels(NormKernels, PoolKernels):
    """Convolution, pooling and batch-normalization kernels; ``self.xp`` is the array module."""

    def _gemm_into(self, out, a, b):
        """``out[...] = a @ b``: straight into ``out`` for BLAS dtypes, else cast on assignment."""
        if out.dtype in _BLAS and a.dtype == out.dtype and b.dtype == out.dtype:
            self.xp.matmul(a, b, out=out)
        else:
            out[...] = self.xp.matmul(a, b)

    @staticmethod
    def _grouped_filter(w, groups):
        """HWIO filter as ``(groups, window_size * C_in // groups, C_out // groups)``."""
        cin, cout = w.shape[-2], w.shape[-1]
        w = w.reshape(-1, cin, groups, cout // groups)
        return w.transpose(2, 0, 1, 3).reshape(groups, -1, cout // groups)

    @staticmethod
    def _grouped_rows(y, groups):
        """``(N, *spatial, C)`` as ``(groups, rows, C // groups)`` (a view)."""
        c = y.shape[-1]
        return y.reshape(-1, groups, c // groups).transpose(1, 0, 2)

    def _mm(self, a, b):
        """``a @ b`` in the operands' dtype (NumPy's bfloat16 matmul returns float32)."""
        # Matrices of a BLAS dtype go to dot, the same BLAS product: matmul's setup
        # costs ~5 us more on some small shapes (a batch-1 weight gradient, the outer
        # product (64, 1) @ (1, 64)). Other dtypes keep matmul (dot of bfloat16 would
        # accumulate in bfloat16, 17x slower).
        if a.ndim == 2 and b.ndim == 2 and a.dtype in _BLAS and b.dtype == a.dtype:
            return a.dot(b)  # the method: numpy.dot runs a Python dispatch stub first (~1 us)
        out = self.xp.matmul(a, b)
        return out if out.dtype == a.dtype else out.astype(a.dtype)

    # Convolution -------------------------------------------------------------

    def conv(self, x, w, *, strides, padding, dilations, groups):
        """Cross-correlation (TF's convolution) of ``x`` with filter ``w``.

        ``x``: ``(N, *S, C)``; ``w``: ``(*K, C // groups, O)``; returns
        ``(N, *out, O)`` where ``out = (S + pad - ((K - 1) * dilations + 1)) //
        strides + 1`` and ``y[n, *o, c_out] = sum_{k, c} xpad[n, *(o * strides +
        k * dilations), c] * w[*k, c, c_out]`` within each channel group.
        """
        window = w.shape[:-2]
        padded = padded_shape(x.shape[1:-1], padding)
        out_spatial = conv_output_shape(padded, window, strides, dilations)
        rows, channels = size(out_spatial), w.shape[-1]
        y = self.xp.empty((x.shape[0] * rows, channels), dtype=self.xp.result_type(x, w))
        if im2col.by_rows(x, window, strides, groups) and w.dtype == x.dtype:
            self._conv_by_rows(y, x, w, out_spatial, strides, padding, dilations)
            return y.reshape((x.shape[0],) + out_spatial + (channels,))
        filters = self._grouped_filter(w, groups)

        def share(parts):  # each chunk writes its own rows of y
            for start, stop, cols in im2col.columns(self.xp, x, out_spatial, window, strides,
                                                    padding, dilations, groups, parts):
                block = y[start * rows:stop * rows]
                if groups == 1:
                    self._gemm_into(block, cols[0].T, filters[0])
                else:
                    grouped = block.reshape(-1, groups, channels // groups).transpose(1, 0, 2)
                    grouped[...] = self.xp.matmul(cols.transpose(0, 2, 1), filters)

        if im2col.no_copy(x, window, strides, padding, groups):
            share(None)  # one GEMM over x itself
        else:
            kernel_pool.shares(self.xp, share, im2col.column_chunks(x, out_spatial, window))
        return y.reshape((x.shape[0],) + out_spatial + (channels,))

    def conv_backprop_filter(self, x, g, *, filter_shape, strides, padding, dilations, groups):
        """Transpose of :meth:`conv` in ``w``: the filter cotangent for output cotangent ``g``.

        ``x``: the forward input ``(N, *S, C)``; ``g``: ``(N, *out, O)``; returns
        an array of ``filter_shape`` (``(*K, C // groups, O)``): im2col of ``x``
        transposed times ``g``, one GEMM per batch chunk.
        """
        window = tuple(filter_shape[:-2])
        out_spatial = g.shape[1:-1]
        rows = size(out_spatial)
        grads = self._grouped_rows(g, groups)

        def share(parts):  # each chunk's product, summed below in chunk order
            return [self._mm(cols, grads[:, start * rows:stop * rows])
                    for start, stop, cols in im2col.columns(self.xp, x, out_spatial, window,
                                                            strides, padding, dilations, groups,
                                                            parts)]

        if im2col.no_copy(x, window, strides, padding, groups):
            products = share(None)
        else:
            products = [part for piece in kernel_pool.shares(
                self.xp, share, im2col.column_chunks(x, out_spatial, window)) for part in piece]
        dw = None
        for part in products:  # the sequential order of adds, whatever the thread count
            dw = part if dw is None else self.xp.add(dw, part, out=dw)
        if dw is None:  # an empty batch
            return self.xp.zeros(filter_shape, dtype=self.xp.result_type(x, g))
        cin, cout = filter_shape[-2], filter_shape[-1]
        dw = dw.reshape(groups, -1, cin, cout // groups).transpose(1, 2, 0, 3)
        return dw.reshape(filter_shape)

    def _conv_by_rows(self, y, x, w, out_spatial, strides, padding, dilations):
        """:meth:`conv` into ``y`` (``(N * pixels, O)``) from :func:`im2col.rows` columns.

        Per batch chunk, one GEMM per filter row over slices of the columns,
        summed in a scratch buffer.
        """
        xp = self.xp
        height, width = x.shape[1] + sum(padding[0]), out_spatial[1]
        pixels, step = size(out_spatial), dilations[0] * width
        taps = w.reshape(w.shape[0], -1, w.shape[-1])  # (filter rows, row taps * C, O)
        outputs = y.reshape(x.shape[0], pixels, w.shape[-1])

        def share(parts):  # each chunk writes its own images of y; a scratch per share
            scratch = None
            for start, stop, cols in im2col.rows(xp, x, out_spatial, w.shape[:-2], strides,
                                                 padding, dilations, parts):
                cols = cols.reshape(stop - start, height * width, -1)
                block = outputs[start:stop]
                xp.matmul(cols[:, :pixels], taps[0], out=block)
                if scratch is None:
                    scratch = xp.empty_like(block)
                part = scratch[:stop - start]
                for i in range(1, len(taps)):
                    xp.matmul(cols[:, i * step:i * step + pixels], taps[i], out=part)
                    xp.add(block, part, out=block)

        kernel_pool.shares(xp, share, im2col.row_chunks(x, out_spatial, w.shape[:-2], padding))

    def conv_backprop_input(self, g, w, *, input_shape, strides, padding, dilations, groups):
        """Transpose of :meth:`conv` in ``x``: the input cotangent for output cotangent ``g``.

        ``g``: ``(N, *out, O)``; ``w``: the forward filter; returns an array of
        ``input_shape`` (``(N, *S, C)``). Also the transposed convolution
        (TF's ``conv2d_transpose`` is exactly this op).
        """
        xp = self.xp
        window = w.shape[:-2]
        out_spatial = g.shape[1:-1]
        extents = [(k - 1) * d + 1 for k, d in zip(window, dilations, strict=True)]
        full = tuple((e - 1 - lo, e - 1 - hi) for e, (lo, hi) in zip(extents, padding, strict=True))
        grown = size([o + a + b for o, (a, b) in zip(out_spatial, full, strict=True)])
        if (groups == 1 and all(s == 1 for s in strides) and all(a >= 0 and b >= 0 for a, b in full)
                and grown <= FLIPPED_MAX_GROWTH * size(out_spatial)):
            # Unit strides and a border that does not dwarf g: a "full" correlation of
            # g with the flipped, in/out-swapped filter, through the forward kernel.
            # Its GEMMs multiply some zeros, but read their columns without the
            # strided adds of col2im, which cost more on CPUs up to this growth.
            flipped = xp.flip(w, axis=tuple(range(len(window)))).swapaxes(-1, -2)
            return self.conv(g, xp.ascontiguousarray(flipped), strides=strides,
                             padding=full, dilations=dilations, groups=1)
        return self._col2im(g, w, input_shape, strides, padding, dilations, groups)

    def _col2im(self, g, w, input_shape, strides, padding, dilations, groups):
        """Input cotangent as col2im: per batch chunk one GEMM, then one strided add per offset.

        For few channels or channel groups (offset-major, as
        :func:`im2col.columns` would lay out the input), one GEMM gives every
        offset's columns and the adds run along image rows into a
        channels-first buffer, transposed back once at the end. Otherwise one
        GEMM per offset gives its piece dense, ``(images, *out, C)``, and the
        adds run along whole rows of pixels and channels.
        """
        xp = self.xp
        window, out_spatial = w.shape[:-2], g.shape[1:-1]
        batch, channels = input_shape[0], input_shape[-1]
        padded = padded_shape(input_shape[1:-1], padding)
        rows, taps = size(out_spatial), size(window)
        keys = offset_keys(window, strides, dilations, out_spatial)
        filters = self._grouped_filter(w, groups)  # (groups, taps * C_in/groups, O/groups)
        grads = self._grouped_rows(g, groups)  # (groups, rows, O/groups)
        channels_first = groups > 1 or im2col.offset_major(channels, g.itemsize)
        per_tap = w.reshape(taps, channels, -1).swapaxes(1, 2) if not channels_first else None
        shape = (channels, batch) + padded if channels_first else (batch,) + padded + (channels,)
        buffer = xp.zeros(shape, dtype=xp.result_type(g, w))

        def share(parts):  # each chunk adds into its own images of buffer
            for start, stop in parts:
                images, block = stop - start, slice(start * rows, stop * rows)
                if channels_first:
                    part = self._mm(filters, grads[:, block].transpose(0, 2, 1))
                    part = part.reshape((groups, taps, channels // groups, images) + out_spatial)
                    target = buffer[:, start:stop]
                    for tap, key in enumerate(keys):
                        piece = part[:, tap].reshape((channels, images) + out_spatial)
                        target[(slice(None), slice(None)) + key] += piece
                else:
                    target = buffer[start:stop]
                    for tap, key in enumerate(keys):  # one BLAS call each (a broadcast
                        # stacked matmul would not call BLAS at all)
                        piece = self._mm(grads[0, block], per_tap[tap])
                        target[full_key(key)] += piece.reshape(
                            (images,) + out_spatial + (channels,))

        kernel_pool.shares(xp, share, im2col.chunks(batch, rows * taps * channels * g.itemsize))
        inner = tuple(slice(lo, lo + n) for (lo, _), n in zip(padding, input_shape[1:-1], strict=True))
        if channels_first:
            return xp.ascontiguousarray(xp.moveaxis(buffer[(slice(None), slice(None)) + inner], 0, -1))
        return xp.ascontiguousarray(buffer[full_key(inner)])
