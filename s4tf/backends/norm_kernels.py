"""Batch-normalization kernels over an array namespace ``xp``: statistics, normalization, transposes.

A mixin of :class:`s4tf.backends.nn_kernels.NNKernels`; the methods are named
after the primitives of :mod:`s4tf.ops.normalization`. Statistics run over
every axis of ``x`` but the feature axis ``axis`` (a non-negative int);
``moments`` is the ``(2, C)`` array :meth:`NormKernels.batch_moments` returns
(the mean and the biased variance of each feature), ``scale`` and ``offset``
are ``(C,)``, and ``r = 1 / sqrt(variance + epsilon)``.

The data is read as a matrix of ``C`` columns (the feature axis moved last when
it is not). NumPy broadcasts a ``(C,)`` row over such a matrix one short row at
a time, several times slower than memory allows for ``C = 16``, so the matrix
is viewed as rows of about :data:`RUN` elements and the per-feature vectors are
tiled to that length. Sums over rows go through the kernel table's
``reduce_sum`` (BLAS on the naive backend). Each kernel computes in the dtype
of its inputs and writes into buffers it allocated, never into its inputs; the
xla backend replays its own functional versions
(``backends/xla/norm_kernels.py``).

Examples
--------
>>> import numpy as np
>>> from s4tf.backends.naive.kernels import NumPyKernels
>>> kernels = NumPyKernels(np)
>>> x = np.array([[0.0, 10.0], [2.0, 30.0]])
>>> moments = kernels.batch_moments(x, axis=1)
>>> moments.tolist()
[[1.0, 20.0], [1.0, 100.0]]
>>> kernels.batch_norm(x, np.ones(2), np.zeros(2), moments, axis=1, epsilon=0.0).tolist()
[[-1.0, -1.0], [1.0, 1.0]]
"""

from __future__ import annotations

import math

__all__ = ["RUN", "NormKernels"]

#: Elements per row of the matrix view that per-feature vectors are tiled to.
RUN = 4096


class NormKernels:
    """Batch-normalization kernels; ``self.xp`` is the array module."""

    def _features_last(self, x, axis):
        """``x`` as a ``(rows, C)`` matrix of its feature axis (a copy when that axis is not last)."""
        if axis != x.ndim - 1:
            x = self.xp.ascontiguousarray(self.xp.moveaxis(x, axis, -1))
        return x.reshape(-1, x.shape[-1])

    def _features_back(self, matrix, shape, axis):
        """The inverse of :meth:`_features_last` for an input of ``shape``."""
        moved = shape[:axis] + shape[axis + 1:] + (shape[axis],)
        out = matrix.reshape(moved)
        if axis != len(shape) - 1:
            out = self.xp.ascontiguousarray(self.xp.moveaxis(out, -1, axis))
        return out

    def _column_sums(self, matrix):
        """``(C,)`` sums of the columns of a ``(rows, C)`` matrix.

        float16 and bfloat16 columns are summed in float32: in their own dtype a
        running sum stops growing (float16: 2048 + 1 is 2048) or overflows.
        """
        if matrix.dtype.itemsize < 4:
            return self.xp.sum(matrix, axis=0, dtype="float32").astype(matrix.dtype)
        return self.reduce_sum(matrix, axis=(0,), keepdims=False)

    def _column_means(self, matrix, inverse):
        """``(C,)`` means of the columns (``inverse``: one over the rows, typed like ``matrix``).

        float16 and bfloat16 sums are divided while still float32, so a mean of
        many values stays finite though their sum would not be.
        """
        if matrix.dtype.itemsize < 4:
            total = self.xp.sum(matrix, axis=0, dtype="float32")
            return (total * inverse.astype("float32")).astype(matrix.dtype)
        return self._column_sums(matrix) * inverse

    def _scalar(self, value, like):
        """``value`` typed like ``like`` (a Python float would lift bfloat16 to float32)."""
        return self.xp.asarray(value, dtype=like.dtype)

    def _tile(self, vector, tiles):
        """``vector`` repeated ``tiles`` times (one broadcast copy; ``xp.tile`` costs twice that)."""
        out = self.xp.empty((tiles, vector.shape[0]), dtype=vector.dtype)
        out[...] = vector
        return out.reshape(-1)

    def _centered(self, matrix, mean):
        """``(matrix - mean)`` in a new array shaped ``(rows * C / run, run)``, and its tiling."""
        rows, channels = matrix.shape
        tiles = math.gcd(rows, max(1, RUN // channels)) if rows else 1
        shape = (rows // tiles, tiles * channels)
        return self.xp.subtract(matrix.reshape(shape), self._tile(mean, tiles)), tiles

    def _inverse_count(self, matrix):
        rows = matrix.shape[0]
        return self._scalar(1.0 / rows if rows else math.nan, matrix)

    def _rstd(self, moments, epsilon):
        """``1 / sqrt(variance + epsilon)`` per feature."""
        return 1 / self.xp.sqrt(moments[1] + self._scalar(epsilon, moments))

    def batch_moments(self, x, *, axis):
        """``(2, C)``: the mean and the biased variance of each feature of ``x``.

        The variance is the mean of the squared deviations (two passes over
        ``x``, no cancellation between large squares).
        """
        matrix = self._features_last(x, axis)
        inverse = self._inverse_count(matrix)
        mean = self._column_means(matrix, inverse)
        centered, _ = self._centered(matrix, mean)
        self.xp.multiply(centered, centered, out=centered)
        variance = self._column_means(centered.reshape(matrix.shape), inverse)
        return self.xp.stack([mean, variance])

    def batch_norm(self, x, scale, offset, moments, *, axis, epsilon):
        """``(x - mean) * scale * r + offset`` with the statistics ``moments`` of ``x``."""
        xp = self.xp
        matrix = self._features_last(x, axis)
        y, tiles = self._centered(matrix, moments[0])
        xp.multiply(y, self._tile(scale * self._rstd(moments, epsilon), tiles), out=y)
        xp.add(y, self._tile(offset, tiles), out=y)
        return self._features_back(y, x.shape, axis)

    def batch_norm_backprop(self, g, x, scale, moments, *, axis, epsilon):
        """The input cotangent of :meth:`batch_norm` (statistics included) for output cotangent ``g``.

        ``scale * r * (g - mean(g) - xh * mean(g * xh))`` with ``xh = (x - mean) * r``,
        the means taken per feature.
        """
        xp = self.xp
        matrix, grads = self._features_last(x, axis), self._features_last(g, axis)
        inverse, r = self._inverse_count(matrix), self._rstd(moments, epsilon)
        centered, tiles = self._centered(matrix, moments[0])
        grads = grads.reshape(centered.shape)
        dx = xp.multiply(grads, centered)
        grad_mean = self._column_means(grads.reshape(matrix.shape), inverse)
        projection = self._column_means(dx.reshape(matrix.shape), inverse)  # mean(g * (x - mean))
        factor = scale * r
        xp.multiply(grads, self._tile(factor, tiles), out=dx)
        xp.multiply(centered, self._tile(factor * r * r * projection, tiles), out=centered)
        xp.subtract(dx, centered, out=dx)
        xp.subtract(dx, self._tile(factor * grad_mean, tiles), out=dx)
        return self._features_back(dx, x.shape, axis)

    def batch_norm_scale_grad(self, g, x, moments, *, axis, epsilon):
        """``(C,)``: the sum of ``g * xh`` per feature, :meth:`batch_norm`'s cotangent of ``scale``."""
        matrix = self._features_last(x, axis)
        centered, _ = self._centered(matrix, moments[0])
        grads = self._features_last(g, axis).reshape(centered.shape)
        self.xp.multiply(centered, grads, out=centered)
        return self._column_sums(centered.reshape(matrix.shape)) * self._rstd(moments, epsilon)

    # Layer normalization over the last axis (s4tf/ops/layer_norm.py). Functional
    # (no out=), so JAX runs them as they are; the operations and their order are
    # the composite's, so the forward gives its values.
    # Constants are typed: a Python float would lift NumPy's bfloat16 to float32.
    def _row_stats(self, x, epsilon):
        xp = self.xp
        count = self._scalar(x.shape[-1], x)
        centered = x - xp.sum(x, axis=-1, keepdims=True) / count
        variance = xp.sum(centered * centered, axis=-1, keepdims=True) / count
        return centered, 1 / xp.sqrt(variance + self._scalar(epsilon, x))

    def layer_norm(self, x, scale, offset, *, epsilon):
        """``(x - mean) * r * scale + offset``, the statistics of each row (last axis)."""
        centered, r = self._row_stats(x, epsilon)
        return centered * r * scale + offset

    def layer_norm_backprop(self, g, x, scale, *, epsilon):
        """``r * (v - mean(v) - xh * mean(v * xh))``, ``v = g * scale``: :meth:`layer_norm`'s x cotangent."""
        xp = self.xp
        count = self._scalar(x.shape[-1], x)
        centered, r = self._row_stats(x, epsilon)
        normalized = centered * r
        v = g * scale
        v_mean = xp.sum(v, axis=-1, keepdims=True) / count
        projection = xp.sum(v * normalized, axis=-1, keepdims=True) / count
        return r * (v - v_mean - normalized * projection)
