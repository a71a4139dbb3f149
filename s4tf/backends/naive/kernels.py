"""The naive backend's kernel table: the shared kernels, with three that NumPy runs better another way.

``numpy.where`` picks each element with a branch, so on data whose condition
has no pattern (ReLU on activations: about half the signs negative, in no
order) the CPU mispredicts about every other element and the select runs
10-20x slower than an add. :meth:`NumPyKernels.where` selects with integer
arithmetic on the elements' bits instead, ``y + (x - y) * condition`` in
wrap-around unsigned ints (one multiply when ``y`` is ``0.0``, as in ReLU):
passes at memory speed, exact to the bit (``-0.0`` and NaN payloads
included). GPU and XLA selects have no branch to mispredict, so the other
backends keep the shared kernel.

:meth:`NumPyKernels.relu` needs no select at all: ``fmax(x, 0.0) + 0.0`` gives
the same bits as ``where(x > 0, x, 0.0)`` (NaN and ``-0.0`` give ``+0.0``).

``numpy.sum`` over the leading axes of an array (a batch norm's statistics,
a bias's gradient: everything but the channels) adds one short row at a time
and runs 5-18x slower than memory allows; :meth:`NumPyKernels.reduce_sum`
gives that sum to BLAS as a vector-matrix product with a vector of ones.

At batch 1 a training step is mostly Python frames, so a few kernels skip
NumPy's Python-level helpers: ``reshape`` calls the array's method (not
``numpy.reshape``'s wrapper), a small ``broadcast_to`` writes the array out
(``numpy.broadcast_to``'s read-only view costs ~2 us to set up), and the
transposed products call the BLAS product directly rather than through
another wrapped kernel.

NumPy has no float16 or bfloat16 arithmetic of its own: it converts every
element to float32 and back inside each loop (float16 matmul: about 10x
slower than float32, no BLAS), and sums in the low dtype (a float16 sum of
squares overflows at 65,504). So every arithmetic kernel here computes
float16 and bfloat16 in float32 (:data:`FLOAT32_ARITHMETIC`): its operands are
cast up once (a vectorised cast), the float32 kernel runs (BLAS, im2col), and
its floating results are rounded back to the operands' dtype. Results keep
their dtype and are as accurate as a float32 computation rounded once.

The convolutions share their chunks with the kernel pool
(:func:`s4tf.backends.kernel_pool.shares`) with OpenBLAS held at one thread, and
GELU's gradient (:data:`ROW_WISE`) runs in blocks of rows on it, bit for
bit as on one thread.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math

import numpy as np

from ...dtypes import as_dtype
from .. import blas_threads, im2col, kernel_pool
from ..array_kernels import ArrayKernels

__all__ = ["NumPyKernels"]

#: Below this many elements ``numpy.where``'s one pass beats the bit arithmetic.
SELECT_MIN_SIZE = 4096
#: Below this many elements ``numpy.sum`` is as fast as a BLAS call.
SUM_MIN_SIZE = 4096
#: Up to this many elements a broadcast is written out: ``numpy.broadcast_to``'s read-only
#: view costs ~2 us of Python setup, a small array's copy a fraction of that (a mean's
#: pullback broadcasts once per step).
BROADCAST_COPY_MAX_SIZE = 4096
_BLAS = (np.dtype(np.float32), np.dtype(np.float64))
_BITS = {2: np.uint16, 4: np.uint32, 8: np.uint64}
_LOW = frozenset({np.dtype(np.float16), as_dtype("bfloat16").numpy})
#: The kernels that compute float16 and bfloat16 operands in float32 (see the module's
#: docstring); data movement (reshape, gather, concat, pad, ...) keeps the dtype.
FLOAT32_ARITHMETIC = (
    "add", "sub", "mul", "div", "pow", "pow_scalar", "neg", "abs", "exp", "expm1", "log",
    "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh", "sigmoid", "maximum", "minimum",
    "relu", "relu_grad", "reduce_sum", "reduce_max", "reduce_min", "matmul", "matmul_nt",
    "matmul_tn", "dense", "conv", "conv_backprop_input", "conv_backprop_filter",
    "batch_moments", "batch_norm", "batch_norm_backprop", "batch_norm_scale_grad", "max_pool",
    "max_pool_scatter", "max_pool_select", "window_sum", "window_sum_transpose",
    "scatter_add", "gelu", "gelu_grad", "layer_norm", "layer_norm_backprop",
)

#: The kernels whose output rows depend on the same rows of their leading operands
#: alone (the other operands have no row axis), and how many leading operands they
#: take: run in blocks of rows on the kernel pool (:func:`_by_rows`). GELU's
#: gradient, some fifteen passes over (batch, positions, 4 * width) temporaries, runs
#: 1.7-2.5x faster so (transformer sizes, 2 cores); GELU itself, layer norm and its
#: gradient, ReLU and batch norm measured 0.6-1.5x, mostly slower: their few passes
#: cost less than the pool's hand-off and the copy into the output.
ROW_WISE = {"gelu_grad": 2}


class NumPyKernels(ArrayKernels):
    """:class:`ArrayKernels` over NumPy, with branch-free ``where`` and ``relu`` and BLAS leading-axis sums.

    Examples
    --------
    >>> import numpy as np
    >>> kernels = NumPyKernels(np)
    >>> x = np.linspace(-1.0, 1.0, 5000, dtype=np.float32)
    >>> out = kernels.where(x > 0, x, 0.0)
    >>> out.dtype, bool((out == np.maximum(x, 0)).all())
    (dtype('float32'), True)
    >>> kernels.reduce_sum(np.ones((64, 32, 3)), axis=(0, 1), keepdims=False).tolist()
    [2048.0, 2048.0, 2048.0]
    """

    def reduce_sum(self, x, *, axis, keepdims):
        lead = len(axis) if isinstance(axis, tuple) else 0  # ops pass sorted tuples
        if (x.dtype not in _BLAS or not 0 < lead < x.ndim or tuple(axis) != tuple(range(lead))
                or x.size < SUM_MIN_SIZE or not x.flags.c_contiguous):
            return np.sum(x, axis=axis, keepdims=keepdims)
        count = math.prod(x.shape[:lead])
        total = np.ones(count, dtype=x.dtype) @ x.reshape(count, -1)
        return total.reshape(((1,) * lead if keepdims else ()) + x.shape[lead:])

    # The convolutions run their chunks on the kernel pool (kernel_pool.shares) with
    # OpenBLAS at one thread; their other GEMMs (a 1x1 window's one product, a
    # single chunk) are held there too: one multi-threaded call leaves OpenBLAS's
    # worker spinning for its next job, on a core the pool's next chunks need
    # (ResNet-56: ~160 ms of CPU a step).
    def conv(self, x, w, **params):
        with _pool_blas():
            return super().conv(x, w, **params)

    def conv_backprop_input(self, g, w, **params):
        with _pool_blas():
            return super().conv_backprop_input(g, w, **params)

    def conv_backprop_filter(self, x, g, **params):
        with _pool_blas():
            return super().conv_backprop_filter(x, g, **params)

    # The transposed products call the BLAS product directly, not through matmul: each
    # kernel of FLOAT32_ARITHMETIC is wrapped, and a wrapped kernel calling another
    # pays two more Python frames (a weight gradient, at batch 1, is mostly frames).
    def matmul_nt(self, x, y):
        return self._mm(x, y.swapaxes(-1, -2))  # a view, which BLAS reads as it is

    def matmul_tn(self, x, y):
        return self._mm(x.swapaxes(-1, -2), y)

    def broadcast_to(self, x, *, shape):
        if math.prod(shape) > BROADCAST_COPY_MAX_SIZE:
            return np.broadcast_to(x, shape)
        out = np.empty(shape, x.dtype)
        out[...] = x
        return out

    def reshape(self, x, *, shape):
        # The array's method, not numpy.reshape: the function's Python wrapper
        # (fromnumeric) costs 4x the reshape itself, a bias gradient's share at batch 1.
        return x.reshape(shape)

    def relu(self, x):
        if x.dtype.kind != "f" or not x.dtype.isbuiltin:
            return super().relu(x)
        # No select at all: fmax ignores NaN (giving 0.0, as where(x > 0, x, 0.0) does)
        # and has no branch; adding +0.0 turns a -0.0 (fmax may return either zero for
        # it) into +0.0. Exact, and 1.2-4x faster than the select.
        out = np.fmax(x, 0.0)
        out += 0.0
        return out

    def relu_grad(self, g, x):
        # ReLU's pullback: g and x have one shape, so small ones skip where's broadcasting.
        if g.shape == x.shape and g.size < SELECT_MIN_SIZE:
            return np.where(x > 0, g, np.zeros((), g.dtype))  # bfloat16 + 0.0 is float64
        return super().relu_grad(g, x)

    def where(self, condition, x, y):
        dtype = np.result_type(x, y)
        bits = _BITS.get(dtype.itemsize)
        if bits is None or dtype.kind != "f" or not dtype.isbuiltin or condition.dtype != bool:
            return np.where(condition, x, y)
        shape = np.broadcast_shapes(condition.shape, np.shape(x), np.shape(y))
        if math.prod(shape) < SELECT_MIN_SIZE:
            return np.where(condition, x, y)
        x_bits, y_bits = _as_bits(x, dtype, bits), _as_bits(y, dtype, bits)
        if _is_positive_zero(y_bits):
            out = np.multiply(x_bits, condition, dtype=bits)
        elif _is_positive_zero(x_bits):
            out = np.multiply(y_bits, np.logical_not(condition), dtype=bits)
        else:
            out = np.multiply(np.subtract(x_bits, y_bits), condition, dtype=bits)
            np.add(out, y_bits, out=out)
        return out.view(dtype)


def _pool_blas():
    """OpenBLAS at one thread while the kernel pool has several (see ``conv``), else as it is."""
    return blas_threads.one_blas_thread() if kernel_pool.threads() > 1 else contextlib.nullcontext()


def _as_bits(value, dtype, bits):
    """``value`` (array or Python number) as ``dtype``, its bits read as unsigned ints."""
    return np.asarray(value, dtype=dtype).view(bits)


def _is_positive_zero(value_bits) -> bool:
    """Whether ``value_bits`` are a scalar's, all zero: ``+0.0`` (``-0.0`` has its sign bit)."""
    return value_bits.ndim == 0 and not value_bits.item()


def _low_dtype(args):
    """The float16 or bfloat16 dtype of the first array operands, or None."""
    for a in args[:2]:
        dtype = getattr(a, "dtype", None)
        if dtype is not None:
            return dtype if dtype in _LOW else None
    return None


def _rounded(out, dtype):
    if isinstance(out, tuple):
        return tuple(_rounded(o, dtype) for o in out)
    if isinstance(out, np.ndarray | np.generic) and out.dtype == np.float32:
        return out.astype(dtype)
    return out


def _in_float32(kernel):
    """``kernel`` computing float16 and bfloat16 operands in float32 (the module's docstring)."""

    def general(self, *args, **params):
        low = _low_dtype(args)
        if low is None:
            return kernel(self, *args, **params)
        args = tuple(a.astype(np.float32) if getattr(a, "dtype", None) in _LOW else a
                     for a in args)
        return _rounded(kernel(self, *args, **params), low)

    # float16 and bfloat16 are 2 bytes wide: one attribute read sends float32 and float64
    # operands (nearly every call, each a microsecond or less of work at batch 1) straight
    # to the kernel. Kernels of one or two arrays and nothing else (the arithmetic, the
    # products) get a wrapper of that signature: packing *args and **params costs as
    # much again as the rest of the wrapper.
    arrays = _array_count(kernel)
    if arrays == 1:
        def run(self, x, /):
            try:
                wide = x.dtype.itemsize != 2
            except AttributeError:
                wide = False
            return kernel(self, x) if wide else general(self, x)
    elif arrays == 2:
        def run(self, x, y, /):
            try:
                wide = x.dtype.itemsize != 2
            except AttributeError:
                wide = False
            return kernel(self, x, y) if wide else general(self, x, y)
    else:
        def run(self, *args, **params):
            try:
                wide = args[0].dtype.itemsize != 2
            except (AttributeError, IndexError):
                wide = False
            return kernel(self, *args, **params) if wide else general(self, *args, **params)

    return functools.wraps(kernel)(run)


def _array_count(kernel):
    """1 or 2: how many arguments ``kernel`` takes after ``self``, when they are all it
    takes, positional and without defaults; None for any other signature."""
    parameters = list(inspect.signature(kernel).parameters.values())[1:]
    plain = all(p.kind is p.POSITIONAL_OR_KEYWORD and p.default is p.empty for p in parameters)
    return len(parameters) if plain and len(parameters) in (1, 2) else None


def _by_rows(kernel, leading):
    """``kernel`` run on blocks of rows of its ``leading`` operands, on the kernel pool.

    For kernels whose every output row depends only on the same rows (the
    first index) of the ``leading`` operands, all shaped like the output;
    any other operands have fewer axes and go whole to every block.
    :func:`kernel_pool.shares` runs the blocks on every core, and blocks of about
    :data:`im2col.CHUNK_BYTES` keep the kernel's temporaries in cache. Each
    block computes exactly what the whole call would for its rows, so the
    bits do not depend on the thread count or the block size. With one
    thread the kernel runs whole, as it always did.
    """
    @functools.wraps(kernel)
    def run(self, *args, **params):
        x = args[0]
        if (not isinstance(x, np.ndarray) or x.dtype not in _BLAS or x.ndim < 2
                or x.nbytes < 2 * im2col.CHUNK_BYTES or kernel_pool.threads() == 1
                # Another dtype would change the result's, a row axis elsewhere its rows.
                or any(not isinstance(a, np.ndarray) or a.dtype != x.dtype
                       or (a.shape != x.shape if i < leading else a.ndim >= x.ndim)
                       for i, a in enumerate(args))):
            return kernel(self, *args, **params)
        out = np.empty(x.shape, dtype=x.dtype)

        def share(parts):  # each block writes its own rows of out
            for start, stop in parts:
                rows = (a[start:stop] for a in args[:leading])
                out[start:stop] = kernel(self, *rows, *args[leading:], **params)

        kernel_pool.shares(np, share, im2col.chunks(x.shape[0], x.nbytes // x.shape[0]))
        return out

    return run


for _name in FLOAT32_ARITHMETIC:
    setattr(NumPyKernels, _name, _in_float32(getattr(NumPyKernels, _name)))
for _name, _leading in ROW_WISE.items():
    setattr(NumPyKernels, _name, _by_rows(getattr(NumPyKernels, _name), _leading))
