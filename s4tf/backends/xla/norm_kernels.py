"""Batch-normalization kernels for the XLA replay, on ``jax.numpy``.

The shared :class:`~s4tf.backends.norm_kernels.NormKernels` write into scratch
buffers (and tile per-feature vectors for NumPy's sake), which ``jax.numpy``
cannot do and XLA does not need: here each kernel is its formula, which XLA
fuses. Same conventions: statistics over every axis but ``axis``, ``moments``
the ``(2, C)`` mean and biased variance, ``r = 1 / sqrt(variance + epsilon)``.
"""

from __future__ import annotations

import jax.numpy as jnp

__all__ = ["JaxNormKernels"]


def _others(x, axis):
    return tuple(i for i in range(x.ndim) if i != axis)


def _along(vector, x, axis):
    """A ``(C,)`` vector shaped to broadcast along ``x``'s feature axis."""
    return vector.reshape(tuple(-1 if i == axis else 1 for i in range(x.ndim)))


def _normalized(x, moments, axis, epsilon):
    """``((x - mean) * r, r)``."""
    r = 1 / jnp.sqrt(moments[1] + jnp.asarray(epsilon, moments.dtype))
    return (x - _along(moments[0], x, axis)) * _along(r, x, axis), r


class JaxNormKernels:
    """Batch-normalization kernels as ``jax.numpy`` formulas; a mixin placed before ``ArrayKernels``.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from s4tf.backends.xla.kernels import JAX_KERNELS
    >>> JAX_KERNELS.batch_moments(jnp.array([[0.0, 10.0], [2.0, 30.0]]), axis=1).tolist()
    [[1.0, 20.0], [1.0, 100.0]]
    """

    def batch_moments(self, x, *, axis):
        axes = _others(x, axis)
        mean = jnp.mean(x, axis=axes)
        centered = x - _along(mean, x, axis)
        return jnp.stack([mean, jnp.mean(centered * centered, axis=axes)])

    def batch_norm(self, x, scale, offset, moments, *, axis, epsilon):
        normalized, _ = _normalized(x, moments, axis, epsilon)
        return normalized * _along(scale, x, axis) + _along(offset, x, axis)

    def batch_norm_backprop(self, g, x, scale, moments, *, axis, epsilon):
        axes = _others(x, axis)
        normalized, r = _normalized(x, moments, axis, epsilon)
        grad_mean = jnp.mean(g, axis=axes)
        projection = jnp.mean(g * normalized, axis=axes)
        return _along(scale * r, x, axis) * (
            g - _along(grad_mean, x, axis) - normalized * _along(projection, x, axis))

    def batch_norm_scale_grad(self, g, x, moments, *, axis, epsilon):
        normalized, _ = _normalized(x, moments, axis, epsilon)
        return jnp.sum(g * normalized, axis=_others(x, axis))
