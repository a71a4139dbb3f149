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

Convolutions are im2col: a strided *view* of the padded input, with one row
per output pixel and one column per (window offset, channel), copied into a
matrix and multiplied with the filter by BLAS -- one matmul per batch chunk of
about :data:`CHUNK_BYTES`, so the copied block is still in cache when the
matmul reads it (this halves the time of one whole-batch matmul on CPU).
The input gradient with unit strides is the same forward kernel on the
cotangent with the flipped filter; otherwise it is col2im, one matmul and one
strided add per window offset. Pools loop over the few window offsets (never
over pixels), each step a vectorized slice.

Replaying on ``jax.numpy``: ``max_pool``, ``max_pool_select`` and
``window_sum`` are purely functional; ``conv*`` (strided views),
``max_pool_scatter`` and ``window_sum_transpose`` (adds into a scratch
buffer) need a backend override such as ``backends/xla/nn_kernels.py``.
"""

from __future__ import annotations

import itertools

import numpy as np


def conv_output_shape(padded, window, strides, dilations) -> tuple[int, ...]:
    """Spatial output shape of a window of ``window`` (dilated) over ``padded`` sizes."""
    return tuple(
        (n - ((k - 1) * d + 1)) // s + 1
        for n, k, s, d in zip(padded, window, strides, dilations, strict=True)
    )


#: Target size of one im2col block: about half of a core's L2 cache on today's CPUs.
CHUNK_BYTES = 1 << 20


def _size(window) -> int:
    return int(np.prod(window, dtype=np.int64))


def _images_per_chunk(batch: int, bytes_per_image: int) -> int:
    return max(1, min(batch, CHUNK_BYTES // max(bytes_per_image, 1)))


class NNKernels:
    """Convolution and pooling kernels; ``self.xp`` is the array module."""

    # Helpers -----------------------------------------------------------------

    def _pad_spatial(self, x, padding, value):
        """``x`` padded on its spatial axes; ``x`` itself when there is no padding."""
        if not any(lo or hi for lo, hi in padding):
            return x
        pads = ((0, 0),) + tuple(padding) + ((0, 0),)
        return self.xp.pad(x, pads, constant_values=value)

    def _windows(self, xpad, out_spatial, window, strides, dilations):
        """Read-only strided view ``(N, *out_spatial, *window, C)`` of ``xpad``.

        Element ``[n, *o, *k, c]`` is ``xpad[n, *(o * s + k * d), c]``; no copy.
        """
        xpad = self.xp.ascontiguousarray(xpad)
        st = xpad.strides
        spatial = st[1:-1]
        shape = (xpad.shape[0],) + tuple(out_spatial) + tuple(window) + (xpad.shape[-1],)
        steps = (
            (st[0],)
            + tuple(a * s for a, s in zip(spatial, strides, strict=True))
            + tuple(a * d for a, d in zip(spatial, dilations, strict=True))
            + (st[-1],)
        )
        return self.xp.lib.stride_tricks.as_strided(xpad, shape, steps)

    def _column_chunks(self, x, out_spatial, window, strides, padding, dilations):
        """im2col in batch chunks: yields ``(start, stop, cols)`` for images ``start:stop``.

        ``cols`` is ``(rows, window_size * C)``, one row per output pixel, columns
        ordered (window offset, channel) like a HWIO filter reshaped to 2-D. A
        chunk is about :data:`CHUNK_BYTES`, so it is still in cache when the
        matmul reads it: one pass over memory instead of three.
        """
        xpad = self._pad_spatial(x, padding, 0)
        view = self._windows(xpad, out_spatial, window, strides, dilations)
        width = _size(window) * x.shape[-1]
        step = _images_per_chunk(x.shape[0], _size(out_spatial) * width * x.itemsize)
        for start in range(0, x.shape[0], step):
            stop = min(start + step, x.shape[0])
            yield start, stop, self.xp.ascontiguousarray(view[start:stop]).reshape(-1, width)

    def _columns(self, x, out_spatial, window, strides, padding, dilations, groups):
        """im2col: ``(groups, rows, window_size * C // groups)``, rows = N * prod(out).

        The column order (window offset major, channel minor) matches a HWIO
        filter reshaped to ``(window_size * C_in, C_out)``.
        """
        xpad = self._pad_spatial(x, padding, 0)
        view = self._windows(xpad, out_spatial, window, strides, dilations)
        channels = x.shape[-1]
        rows = x.shape[0] * int(np.prod(out_spatial, dtype=np.int64))
        size = int(np.prod(window, dtype=np.int64))
        if groups == 1:
            return self.xp.ascontiguousarray(view).reshape(1, rows, size * channels)
        view = view.reshape(view.shape[:-1] + (groups, channels // groups))
        rank = view.ndim
        view = self.xp.moveaxis(view, rank - 2, 0)
        return self.xp.ascontiguousarray(view).reshape(groups, rows, size * (channels // groups))

    @staticmethod
    def _grouped_filter(w, groups):
        """HWIO filter as ``(groups, window_size * C_in // groups, C_out // groups)``."""
        cin, cout = w.shape[-2], w.shape[-1]
        w = w.reshape(-1, cin, groups, cout // groups)
        return w.transpose(2, 0, 1, 3).reshape(groups, -1, cout // groups)

    @staticmethod
    def _grouped_rows(y, groups):
        """``(N, *spatial, C)`` as ``(groups, rows, C // groups)``."""
        c = y.shape[-1]
        return y.reshape(-1, groups, c // groups).transpose(1, 0, 2)

    def _crop(self, buffer, shape, padding):
        """The unpadded part of a padded buffer, as an array of its own."""
        if not any(lo or hi for lo, hi in padding):
            return buffer
        key = (slice(None),) + tuple(
            slice(lo, lo + n) for (lo, _), n in zip(padding, shape[1:-1], strict=True)
        ) + (slice(None),)
        return self.xp.ascontiguousarray(buffer[key])

    def _offset_slices(self, xpad, out_spatial, window, strides):
        """Yield ``(flat offset, xpad slice)`` for each window offset: ``(N, *out, C)``."""
        for flat, k in enumerate(itertools.product(*(range(n) for n in window))):
            key = tuple(
                slice(i, i + s * (o - 1) + 1, s) for i, s, o in zip(k, strides, out_spatial, strict=True)
            )
            yield flat, xpad[(slice(None),) + key + (slice(None),)]

    def _lowest(self, dtype):
        xp = self.xp
        if np.dtype(dtype).kind == "f":
            return -np.inf
        return xp.iinfo(dtype).min

    def _mm(self, a, b):
        """``a @ b`` in the operands' dtype (NumPy's bfloat16 matmul returns float32)."""
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
        padded = tuple(n + lo + hi for n, (lo, hi) in zip(x.shape[1:-1], padding, strict=True))
        out_spatial = conv_output_shape(padded, window, strides, dilations)
        if groups == 1:
            rows = _size(out_spatial)
            w2 = w.reshape(-1, w.shape[-1])
            y = self.xp.empty((x.shape[0] * rows, w.shape[-1]), dtype=self.xp.result_type(x, w))
            chunks = self._column_chunks(x, out_spatial, window, strides, padding, dilations)
            for start, stop, cols in chunks:
                self.xp.matmul(cols, w2, out=y[start * rows:stop * rows])
        else:
            cols = self._columns(x, out_spatial, window, strides, padding, dilations, groups)
            y = self._mm(cols, self._grouped_filter(w, groups)).transpose(1, 0, 2)
        return y.reshape((x.shape[0],) + out_spatial + (w.shape[-1],))

    def conv_backprop_input(self, g, w, *, input_shape, strides, padding, dilations, groups):
        """Transpose of :meth:`conv` in ``x``: the input cotangent for output cotangent ``g``.

        ``g``: ``(N, *out, O)``; ``w``: the forward filter; returns an array of
        ``input_shape`` (``(N, *S, C)``). Also the transposed convolution
        (TF's ``conv2d_transpose`` is exactly this op).
        """
        xp = self.xp
        window = w.shape[:-2]
        out_spatial = g.shape[1:-1]
        channels = input_shape[-1]
        extents = [(k - 1) * d + 1 for k, d in zip(window, dilations, strict=True)]
        full = tuple((e - 1 - lo, e - 1 - hi) for e, (lo, hi) in zip(extents, padding, strict=True))
        grown = _size([o + a + b for o, (a, b) in zip(out_spatial, full, strict=True)])
        if (groups == 1 and all(s == 1 for s in strides) and all(a >= 0 and b >= 0 for a, b in full)
                and grown <= 2 * _size(out_spatial)):
            # Unit strides and a small border: a "full" correlation of g with the
            # flipped, in/out-swapped filter, through the fast chunked forward path.
            flipped = xp.flip(w, axis=tuple(range(len(window)))).swapaxes(-1, -2)
            return self.conv(g, xp.ascontiguousarray(flipped), strides=strides,
                             padding=full, dilations=dilations, groups=1)
        # col2im, one window offset at a time: a matmul gives that offset's
        # contribution as one dense input-shaped slab, added at a strided slice.
        padded = (input_shape[0],) + tuple(
            n + lo + hi for n, (lo, hi) in zip(input_shape[1:-1], padding, strict=True)
        ) + (channels,)
        buffer = xp.zeros(padded, dtype=xp.result_type(g, w))
        rows = self._grouped_rows(g, groups)
        taps = w.reshape(-1, w.shape[-2], w.shape[-1])
        per_group = w.shape[-1] // groups
        for flat, k in enumerate(itertools.product(*(range(n) for n in window))):
            tap = taps[flat].reshape(w.shape[-2], groups, per_group).transpose(1, 2, 0)
            piece = self._mm(rows, tap)
            if groups > 1:
                piece = piece.transpose(1, 0, 2)
            key = tuple(
                slice(i * d, i * d + s * (o - 1) + 1, s)
                for i, d, s, o in zip(k, dilations, strides, out_spatial, strict=True)
            )
            buffer[(slice(None),) + key + (slice(None),)] += piece.reshape(g.shape[:-1] + (channels,))
        return self._crop(buffer, input_shape, padding)

    def conv_backprop_filter(self, x, g, *, filter_shape, strides, padding, dilations, groups):
        """Transpose of :meth:`conv` in ``w``: the filter cotangent for output cotangent ``g``.

        ``x``: the forward input ``(N, *S, C)``; ``g``: ``(N, *out, O)``; returns
        an array of ``filter_shape`` (``(*K, C // groups, O)``): im2col of ``x``
        transposed times ``g``, one matmul.
        """
        window = tuple(filter_shape[:-2])
        out_spatial = g.shape[1:-1]
        if groups == 1:
            rows = _size(out_spatial)
            g2 = g.reshape(-1, g.shape[-1])
            dw = None
            chunks = self._column_chunks(x, out_spatial, window, strides, padding, dilations)
            for start, stop, cols in chunks:
                part = self._mm(cols.T, g2[start * rows:stop * rows])
                dw = part if dw is None else self.xp.add(dw, part, out=dw)
            if dw is None:  # an empty batch
                return self.xp.zeros(filter_shape, dtype=self.xp.result_type(x, g))
            return dw.reshape(filter_shape)
        cols = self._columns(x, out_spatial, window, strides, padding, dilations, groups)
        dw = self._mm(cols.transpose(0, 2, 1), self._grouped_rows(g, groups))
        cin, cout = filter_shape[-2], filter_shape[-1]
        dw = dw.reshape(groups, -1, cin, cout // groups).transpose(1, 2, 0, 3)
        return dw.reshape(filter_shape)

    # Pooling -----------------------------------------------------------------

    def max_pool(self, x, *, window, strides, padding):
        """Maximum over each window of ``x`` (``(N, *S, C)``) padded with the lowest value.

        Returns ``(N, *out, C)`` with ``out`` as for a convolution without dilation.
        """
        xpad = self._pad_spatial(x, padding, self._lowest(x.dtype))
        out_spatial = conv_output_shape(xpad.shape[1:-1], window, strides, (1,) * len(window))
        out = None
        for _, piece in self._offset_slices(xpad, out_spatial, window, strides):
            out = piece if out is None else self.xp.maximum(out, piece)
        # A one-element window leaves ``out`` a view of the input: return a copy.
        return self.xp.array(out, copy=True) if _size(window) == 1 else out

    def _first_maxima(self, x, window, strides, padding):
        """For each window offset, a bool mask ``(N, *out, C)``: is it the window's first maximum?

        Exactly one offset is marked per window (TF's MaxPoolGrad ties: the first).
        Masks and products instead of ``where``: several times faster in NumPy.
        """
        xpad = self._pad_spatial(x, padding, self._lowest(x.dtype))
        out_spatial = conv_output_shape(xpad.shape[1:-1], window, strides, (1,) * len(window))
        pieces = [piece for _, piece in self._offset_slices(xpad, out_spatial, window, strides)]
        best = pieces[0]
        for piece in pieces[1:]:
            best = self.xp.maximum(best, piece)
        taken = None
        for piece in pieces:
            hit = piece == best
            if taken is None:
                taken = hit
            else:
                hit = hit & ~taken
                taken = taken | hit
            yield hit

    def max_pool_select(self, x, v, *, window, strides, padding):
        """For each window, ``v`` at the position of the first maximum of ``x`` there.

        ``x``, ``v``: ``(N, *S, C)``; returns ``(N, *out, C)``. Max-pooling's JVP
        (``v`` a tangent) and the transpose of :meth:`max_pool_scatter`.
        """
        vpad = self._pad_spatial(v, padding, 0)
        out_spatial = conv_output_shape(vpad.shape[1:-1], window, strides, (1,) * len(window))
        values = self._offset_slices(vpad, out_spatial, window, strides)
        chosen = None
        for hit, (_, piece) in zip(self._first_maxima(x, window, strides, padding), values,
                                   strict=True):
            term = piece * hit
            chosen = term if chosen is None else chosen + term
        return chosen

    def max_pool_scatter(self, x, g, *, window, strides, padding):
        """Transpose of :meth:`max_pool_select` in ``v``: max-pooling's VJP.

        ``x``: ``(N, *S, C)``; ``g``: ``(N, *out, C)``; returns ``x``'s shape,
        each ``g`` added at the first maximum of ``x`` in its window.
        """
        padded = (x.shape[0],) + tuple(
            n + lo + hi for n, (lo, hi) in zip(x.shape[1:-1], padding, strict=True)
        ) + (x.shape[-1],)
        buffer = self.xp.zeros(padded, dtype=g.dtype)
        out_spatial = g.shape[1:-1]
        offsets = itertools.product(*(range(n) for n in window))
        for hit, k in zip(self._first_maxima(x, window, strides, padding), offsets, strict=True):
            key = tuple(slice(i, i + s * (o - 1) + 1, s)
                        for i, s, o in zip(k, strides, out_spatial, strict=True))
            buffer[(slice(None),) + key + (slice(None),)] += g * hit
        return self._crop(buffer, x.shape, padding)

    def window_sum(self, x, *, window, strides, padding):
        """Sum over each window of ``x`` (``(N, *S, C)``) zero-padded; ``(N, *out, C)``.

        Average pooling divides this by the count of real (unpadded) elements.
        """
        xpad = self._pad_spatial(x, padding, 0)
        out_spatial = conv_output_shape(xpad.shape[1:-1], window, strides, (1,) * len(window))
        out = None
        for _, piece in self._offset_slices(xpad, out_spatial, window, strides):
            out = piece if out is None else out + piece
        return self.xp.array(out, copy=True) if _size(window) == 1 else out

    def window_sum_transpose(self, g, *, input_shape, window, strides, padding):
        """Transpose of :meth:`window_sum`: each ``g`` added to every element of its window.

        ``g``: ``(N, *out, C)``; returns an array of ``input_shape``.
        """
        padded = (input_shape[0],) + tuple(
            n + lo + hi for n, (lo, hi) in zip(input_shape[1:-1], padding, strict=True)
        ) + (input_shape[-1],)
        buffer = self.xp.zeros(padded, dtype=g.dtype)
        out_spatial = g.shape[1:-1]
        for k in itertools.product(*(range(n) for n in window)):
            key = tuple(slice(i, i + s * (o - 1) + 1, s) for i, s, o in zip(k, strides, out_spatial, strict=True))
            buffer[(slice(None),) + key + (slice(None),)] += g
        return self._crop(buffer, input_shape, padding)
