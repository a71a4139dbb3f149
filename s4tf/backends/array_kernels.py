"""Kernels written once against an array namespace ``xp`` (NumPy, CuPy, jax.numpy).

Each method is the raw computation of the primitive of the same name in
:mod:`s4tf.ops`. They take and return arrays of ``xp`` and never write into
their inputs, so the lazy backend can replay the very same code on
``jax.numpy``. Backends subclass :class:`ArrayKernels` only where an array
library needs something different (NumPy's ``add.at`` vs JAX's ``.at[].add``).
"""

from __future__ import annotations

import math

import numpy as np

from .nn_kernels import NNKernels

_GELU_C = math.sqrt(2.0 / math.pi)


class ArrayKernels(NNKernels):
    """Kernels for every core primitive over array module ``xp``."""

    def __init__(self, xp) -> None:
        self.xp = xp

    # Elementwise, one input.
    def neg(self, x):
        return -x

    def exp(self, x):
        return self.xp.exp(_inexact(x))

    def log(self, x):
        return self.xp.log(_inexact(x))

    def log1p(self, x):
        return self.xp.log1p(_inexact(x))

    def expm1(self, x):
        return self.xp.expm1(_inexact(x))

    def sqrt(self, x):
        return self.xp.sqrt(_inexact(x))

    def rsqrt(self, x):
        return 1 / self.xp.sqrt(_inexact(x))

    def sin(self, x):
        return self.xp.sin(_inexact(x))

    def cos(self, x):
        return self.xp.cos(_inexact(x))

    def tan(self, x):
        return self.xp.tan(_inexact(x))

    def tanh(self, x):
        return self.xp.tanh(_inexact(x))

    def sigmoid(self, x):
        # tanh form: no overflow for large |x|, unlike 1 / (1 + exp(-x)). The half is
        # typed: a Python float would lift NumPy's bfloat16 (ml_dtypes) to float32.
        x = _inexact(x)
        half = self.xp.asarray(0.5, dtype=x.dtype)
        return (self.xp.tanh(x * half) + 1) * half

    def abs(self, x):
        return self.xp.abs(x)

    def sign(self, x):
        return self.xp.sign(x)

    def floor(self, x):
        return self.xp.floor(x)

    def ceil(self, x):
        return self.xp.ceil(x)

    def round(self, x):
        return self.xp.round(x)

    def logical_not(self, x):
        return self.xp.logical_not(x)

    def pow_scalar(self, x, *, exponent):
        if exponent == 2:
            return x * x
        return x ** self.xp.asarray(exponent, dtype=x.dtype)

    def cast(self, x, *, dtype):
        # Ops pass an s4tf DType (hashable, backend-neutral); array modules want their own.
        return x.astype(getattr(dtype, "numpy", dtype))

    # Elementwise, two or three inputs (same dtype, NumPy broadcasting).
    def add(self, x, y):
        return x + y

    def sub(self, x, y):
        return x - y

    def mul(self, x, y):
        return x * y

    def div(self, x, y):
        return _inexact(x) / _inexact(y)

    def pow(self, x, y):
        return self.xp.power(x, y)

    def maximum(self, x, y):
        return self.xp.maximum(x, y)

    def minimum(self, x, y):
        return self.xp.minimum(x, y)

    def floor_div(self, x, y):
        return self.xp.floor_divide(x, y)

    def mod(self, x, y):
        return self.xp.mod(x, y)

    def equal(self, x, y):
        return x == y

    def not_equal(self, x, y):
        return x != y

    def less(self, x, y):
        return x < y

    def less_equal(self, x, y):
        return x <= y

    def greater(self, x, y):
        return x > y

    def greater_equal(self, x, y):
        return x >= y

    def logical_and(self, x, y):
        return self.xp.logical_and(x, y)

    def logical_or(self, x, y):
        return self.xp.logical_or(x, y)

    def where(self, condition, x, y):
        return self.xp.where(condition, x, y)

    def relu(self, x):
        # where(x > 0, x, 0.0), as the composite it replaces: NaN and -0.0 give +0.0,
        # ints and bools give float32.
        x = _inexact(x)
        # A zero of x's dtype: NumPy promotes bfloat16 (ml_dtypes) with a Python float
        # to float64.
        return self.where(x > 0, x, self.xp.zeros((), x.dtype))

    def relu_grad(self, g, x):
        # ReLU's pullback: g where x > 0, else +0.0 (the derivative at 0 is 0, as in S4TF).
        return self.where(x > 0, g, self.xp.zeros((), g.dtype))

    def gelu(self, x):
        # The composite's operations in its order (ops/elementwise.py), so the bits agree.
        # Constants are typed: a Python float would lift NumPy's bfloat16 to float32.
        k, c, one, half = (self.xp.asarray(v, dtype=x.dtype) for v in (0.044715, _GELU_C, 1, 0.5))
        inner = (x + x * x * x * k) * c
        return x * (self.xp.tanh(inner) + one) * half

    def gelu_grad(self, v, x):
        # v * gelu'(x): 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 k x^2), t = tanh(c (x + k x^3)).
        k, c, one, half, k3 = (self.xp.asarray(a, dtype=x.dtype)
                               for a in (0.044715, _GELU_C, 1, 0.5, 3 * 0.044715))
        t = self.xp.tanh((x + x * x * x * k) * c)
        slope = (x * x * k3 + one) * c
        return v * ((t + one) * half + x * (one - t * t) * slope * half)

    # Reductions.
    def reduce_sum(self, x, *, axis, keepdims):
        return self.xp.sum(x, axis=axis, keepdims=keepdims)

    def reduce_mean(self, x, *, axis, keepdims):
        # The sum, then one division by the count, as x.sum() / n computes it: the same
        # kernels with the same operands, so the same values. The count is what a Python
        # number becomes in an op: a weak scalar next to an IEEE float, an array of the
        # sum's dtype otherwise (bfloat16, whose NumPy kind is "V").
        count = math.prod(x.shape[a] for a in axis)
        if x.dtype.itemsize == 2 and x.dtype.kind in "fV":
            # float16 and bfloat16 are summed and divided in float32 and rounded once, as
            # jnp.mean and PyTorch do: a float16 sum overflows past 65,504 (the mean of
            # 10,000 tens would be inf) and rounding the sum first adds an error.
            total = self.reduce_sum(x.astype(np.float32), axis=axis, keepdims=keepdims)
            return self.div(total, float(count)).astype(x.dtype)
        total = self.reduce_sum(x, axis=axis, keepdims=keepdims)
        dtype = total.dtype
        divisor = float(count) if dtype.kind == "f" else self.xp.asarray(count, dtype=dtype)
        return self.div(total, divisor)

    def reduce_max(self, x, *, axis, keepdims):
        return self.xp.max(x, axis=axis, keepdims=keepdims)

    def reduce_min(self, x, *, axis, keepdims):
        return self.xp.min(x, axis=axis, keepdims=keepdims)

    def argmax(self, x, *, axis):
        return self.xp.argmax(x, axis=axis).astype(np.int32)

    def argmin(self, x, *, axis):
        return self.xp.argmin(x, axis=axis).astype(np.int32)

    # Shapes.
    def reshape(self, x, *, shape):
        return self.xp.reshape(x, shape)

    def transpose(self, x, *, perm):
        return self.xp.transpose(x, perm)

    def broadcast_to(self, x, *, shape):
        return self.xp.broadcast_to(x, shape)

    def concat(self, *xs, axis):
        return self.xp.concatenate(xs, axis=axis)

    def pad(self, x, *, paddings, value):
        return self.xp.pad(x, paddings, constant_values=value)

    # Indexing: keys are static (ints, slices, None, Ellipsis); gathers take indices.
    def getitem(self, x, *, key):
        return x[key]

    def gather(self, x, indices, *, axis):
        return self.xp.take(x, indices, axis=axis)

    def index_add(self, x, updates, *, key):
        out = self.xp.array(x, copy=True)
        out[key] += updates
        return out

    def scatter_add(self, x, indices, updates, *, axis):
        out = self.xp.array(x, copy=True)
        scatter_add_into(self.xp, out, indices, updates, axis)
        return out

    # Linear algebra.
    def matmul(self, x, y):
        return self._mm(x, y)

    def matmul_nt(self, x, y):
        # x @ y^T (y's last two axes swapped): a view, which BLAS reads as it is.
        return self.matmul(x, _swap_last_axes(y))

    def matmul_tn(self, x, y):
        # x^T @ y (x's last two axes swapped).
        return self.matmul(_swap_last_axes(x), y)

    def dense(self, x, w, b):
        # x @ w + b of matrices x, w and a bias row b: one kernel (one recorded node on a
        # lazy backend) for a dense layer. The product is a fresh array, so the bias is
        # added into it; immutable arrays (JAX) rebind it instead.
        out = self._mm(x, w)
        out += b
        return out

    # Scheduling.
    def optimization_barrier(self, x, *after):
        # Eager backends run ops in program order: nothing to keep apart, x as it is.
        return x


def _swap_last_axes(x):
    """A view of ``x`` with its last two axes swapped (a matrix's transpose)."""
    return x.T if x.ndim == 2 else x.swapaxes(-1, -2)


def _inexact(x):
    """``x``, with ints and bools as float32: the result dtype of floating-valued ops.

    NumPy would give float64 (float16 for bools) and JAX float32; s4tf follows
    JAX on every backend, as float32 is its default float (Python floats give it).
    """
    dtype = getattr(x, "dtype", None)  # Python numbers (weak scalars) pass as they are
    return x if dtype is None or dtype.kind in "fcV" else x.astype(np.float32)


def scatter_add_into(xp, out, indices, updates, axis):
    """``out`` += ``updates`` at ``indices`` along ``axis``, in place; repeats add up.

    ``updates`` has ``gather``'s layout: ``out.shape[:axis] + indices.shape +
    out.shape[axis + 1:]``.
    """
    k = indices.ndim
    target = xp.moveaxis(out, axis, 0)
    source = xp.moveaxis(updates, list(range(axis, axis + k)), list(range(k)))
    xp.add.at(target, indices, source)
