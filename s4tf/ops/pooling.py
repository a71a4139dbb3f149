"""Pooling with TF semantics: max and average windows, global and adaptive pools.

Max pooling is piecewise linear in its input, so its derivatives close over two
primitives (besides ``max_pool`` itself, the fast forward):

=========================  ===========================  =========================
primitive                  cotangent of ``x``           tangent (JVP)
=========================  ===========================  =========================
max_pool(x)                max_pool_scatter(x, g)       max_pool_select(x, t)
max_pool_select(x, v)      (v:) max_pool_scatter(x, a)  max_pool_select(x, t_v)
max_pool_scatter(x, g)     (g:) max_pool_select(x, a)   max_pool_scatter(x, t_g)
=========================  ===========================  =========================

``x`` only chooses the positions (the first maximum of each window, as TF's
MaxPoolGrad), so no rule flows into it from select/scatter. Average pooling is
``window_sum(x) / count`` where ``count`` excludes padding (TF's "same", and
explicit padding likewise: PyTorch's ``count_include_pad=False``);
``window_sum`` and ``window_sum_transpose`` are each other's VJP. Adaptive
average pooling (PyTorch's bins) is linear with a constant matrix per spatial
axis, so it is two matrix products and needs no primitive of its own.
"""

from __future__ import annotations

import numpy as np

from ..tensor import from_numpy
from .batching_helpers import fold_leading_axis, move_axis_to_front
from .linalg import matmul
from .primitive import primitive
from .reductions import max as _reduce_max
from .reductions import mean as _reduce_mean
from .shapes import _reshape, shape_of, transpose
from .window_geometry import check_input, expand, explicit_padding

__all__ = ["adaptive_avg_pool2d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "global_avg_pool1d",
           "global_avg_pool2d", "global_avg_pool3d", "global_max_pool1d", "global_max_pool2d", "global_max_pool3d",
           "max_pool1d", "max_pool2d", "max_pool3d"]



# Batching rules (s4tf.vmap): every pool has a batch axis N of its own, and the vmap
# batch is folded into it (the positions' selector x is broadcast when only the values
# are batched, as each example's windows pick their own maxima).
def _window_sum_transpose_batch(args, dims, *, input_shape, window, strides, padding):
    g = move_axis_to_front(args[0], dims[0])
    size, n = shape_of(g)[:2]
    out = window_sum_transpose_(_reshape(g, shape=(size * n, *shape_of(g)[2:])),
                                input_shape=(size * input_shape[0], *input_shape[1:]),
                                window=window, strides=strides, padding=padding)
    return _reshape(out, shape=(size, *input_shape)), 0


max_pool_scatter_ = primitive(
    "max_pool_scatter",
    promote=True,
    batch=fold_leading_axis((0, 1)),
    vjp=(None, lambda a, x, g, out, **p: max_pool_select_(x, a, **p)),
    jvp=(None, lambda t, x, g, out, **p: max_pool_scatter_(x, t, **p)),
)
max_pool_select_ = primitive(
    "max_pool_select",
    promote=True,
    batch=fold_leading_axis((0, 1)),
    vjp=(None, lambda a, x, v, out, **p: max_pool_scatter_(x, a, **p)),
    jvp=(None, lambda t, x, v, out, **p: max_pool_select_(x, t, **p)),
)
max_pool_ = primitive(
    "max_pool",
    batch=fold_leading_axis(),
    vjp=(lambda g, x, out, **p: max_pool_scatter_(x, g, **p),),
    jvp=(lambda t, x, out, **p: max_pool_select_(x, t, **p),),
)
window_sum_transpose_ = primitive(
    "window_sum_transpose",
    batch=_window_sum_transpose_batch,
    vjp=(lambda a, g, out, input_shape, **p: window_sum_(a, **p),),
    jvp=(lambda t, g, out, input_shape, **p: window_sum_transpose_(t, input_shape=input_shape, **p),),
)
window_sum_ = primitive(
    "window_sum",
    batch=fold_leading_axis(),
    vjp=(lambda g, x, out, **p: window_sum_transpose_(g, input_shape=shape_of(x), **p),),
    jvp=(lambda t, x, out, **p: window_sum_(t, **p),),
)


def _geometry(x, n, pool_size, strides, padding, op):
    shape = check_input(x, n, op)
    window = expand(pool_size, n, "pool_size", op)
    strides = window if strides is None else expand(strides, n, "strides", op)
    pads = explicit_padding(shape[1:-1], window, strides, (1,) * n, padding, op)
    if any(before >= k or after >= k for (before, after), k in zip(pads, window, strict=True)):
        # A window wholly in the padding would have no element: -inf or 0 / 0.
        raise ValueError(
            f"{op}: padding {padding} puts a whole window of pool_size {window} in the padding; "
            "pad each side by less than the window."
        )
    return shape, window, strides, pads


def _counts(spatial, window, strides, pads):
    """How many real (unpadded) elements each output window covers, ``(1, *out, 1)``."""
    per_axis = []
    for size, k, s, (lo, hi) in zip(spatial, window, strides, pads, strict=True):
        starts = np.arange(0, size + lo + hi - k + 1, s) - lo
        per_axis.append(np.minimum(starts + k, size) - np.maximum(starts, 0))
    counts = per_axis[0]
    for axis in per_axis[1:]:
        counts = np.multiply.outer(counts, axis)
    return counts.reshape((1,) + counts.shape + (1,))


def _max_pool(x, n, pool_size, strides, padding, op):
    _, window, strides, pads = _geometry(x, n, pool_size, strides, padding, op)
    return max_pool_(x, window=window, strides=strides, padding=pads)


def _avg_pool(x, n, pool_size, strides, padding, op):
    shape, window, strides, pads = _geometry(x, n, pool_size, strides, padding, op)
    total = window_sum_(x, window=window, strides=strides, padding=pads)
    if not any(lo or hi for lo, hi in pads):
        return total / float(np.prod(window))
    # TF's "same" average divides by the real elements only: a constant per position.
    counts = _counts(shape[1:-1], window, strides, pads)
    return total / from_numpy(counts, x.dtype, like=x)


def _make_pool(kind, n):
    op = f"{kind}_pool{n}d"
    impl = _max_pool if kind == "max" else _avg_pool

    def pool(input, pool_size, strides=None, padding="valid"):
        return impl(input, n, pool_size, strides, padding, op)

    pool.__name__ = pool.__qualname__ = op
    return pool


_POOL_DOC = """{title} pooling over {n}-D windows of channels-last ``input`` (TF semantics).

Parameters
----------
input : Tensor
    ``(batch, *spatial, channels)`` with {n} spatial axes.
pool_size : int or tuple of {n} ints
strides : int or tuple of {n} ints, optional
    Defaults to ``pool_size`` (non-overlapping windows).
padding : "valid", "same" or {n} (before, after) pairs
    {padding}
    Explicit pairs pad each side by that many elements (fewer than the
    window), in the same way.

Returns
-------
Tensor
    ``(batch, *out_spatial, channels)``.

Examples
--------
>>> import s4tf
>>> x = s4tf.reshape(s4tf.arange(16.0), ({shape}))
>>> s4tf.nn.{kind}_pool{n}d(x, {pool}, {pool}).reshape(-1).tolist()
{result}
"""
_MAX_PADDING = ('"same" pads with -inf; the derivative goes to the first maximum of '
                "each window.")
_AVG_PADDING = '"same" divides by the count of real elements, excluding the padding.'

max_pool1d, max_pool2d, max_pool3d = (_make_pool("max", n) for n in (1, 2, 3))
avg_pool1d, avg_pool2d, avg_pool3d = (_make_pool("avg", n) for n in (1, 2, 3))
_EXAMPLES = {
    1: ("1, 16, 1", "4", {"max": "[3.0, 7.0, 11.0, 15.0]", "avg": "[1.5, 5.5, 9.5, 13.5]"}),
    2: ("1, 4, 4, 1", "2", {"max": "[5.0, 7.0, 13.0, 15.0]", "avg": "[2.5, 4.5, 10.5, 12.5]"}),
    3: ("1, 2, 2, 4, 1", "2", {"max": "[13.0, 15.0]", "avg": "[6.5, 8.5]"}),
}
for _fn in (max_pool1d, max_pool2d, max_pool3d, avg_pool1d, avg_pool2d, avg_pool3d):
    _kind, _n = _fn.__name__[:3], int(_fn.__name__[-2])
    _shape, _pool, _results = _EXAMPLES[_n]
    _fn.__doc__ = _POOL_DOC.format(
        title="Max" if _kind == "max" else "Average", n=_n, kind=_kind, shape=_shape,
        pool=_pool, result=_results[_kind],
        padding=_MAX_PADDING if _kind == "max" else _AVG_PADDING)


def _make_global(kind, n):
    op = f"global_{kind}_pool{n}d"
    reduce = _reduce_max if kind == "max" else _reduce_mean

    def pool(input):
        check_input(input, n, op)
        return reduce(input, axis=tuple(range(1, n + 1)))

    pool.__name__ = pool.__qualname__ = op
    pool.__doc__ = f"""{'Maximum' if kind == 'max' else 'Mean'} over all {n} spatial axes.

    Parameters
    ----------
    input : Tensor
        ``(batch, *spatial, channels)`` with {n} spatial axes.

    Returns
    -------
    Tensor
        ``(batch, channels)``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.nn.{op}(s4tf.ones([2{', 3' * n}, 4])).shape
    (2, 4)
    """
    return pool


global_avg_pool1d, global_avg_pool2d, global_avg_pool3d = (_make_global("avg", n) for n in (1, 2, 3))
global_max_pool1d, global_max_pool2d, global_max_pool3d = (_make_global("max", n) for n in (1, 2, 3))


def _bin_means(size: int, out: int) -> np.ndarray:
    """``(out, size)``: row ``i`` averages PyTorch's bin ``floor(i*size/out) .. ceil((i+1)*size/out)``."""
    matrix = np.zeros((out, size))
    for i in range(out):
        start, end = (i * size) // out, -(-(i + 1) * size // out)
        matrix[i, start:end] = 1.0 / (end - start)
    return matrix


def adaptive_avg_pool2d(input, output_size):
    """Average pooling to a fixed ``output_size``, with PyTorch's ``adaptive_avg_pool2d`` bins.

    Output row ``i`` of ``out`` averages input rows ``floor(i * H / out)`` up
    to (excluding) ``ceil((i + 1) * H / out)``, and likewise for columns, so
    bins may overlap or repeat when ``out`` does not divide ``H`` (a 1x1 map
    pooled to 7x7 is the value repeated). torchvision's VGG pools its features
    to 7x7 this way before the classifier.

    Parameters
    ----------
    input : Tensor
        ``(batch, height, width, channels)``.
    output_size : int or tuple of 2 ints
        ``(out_height, out_width)``.

    Returns
    -------
    Tensor
        ``(batch, out_height, out_width, channels)``.

    Examples
    --------
    >>> import s4tf
    >>> x = s4tf.reshape(s4tf.arange(9.0), (1, 3, 3, 1))
    >>> s4tf.nn.adaptive_avg_pool2d(x, 2).reshape(-1).tolist()
    [2.0, 3.0, 5.0, 6.0]
    >>> s4tf.nn.adaptive_avg_pool2d(s4tf.ones([2, 1, 1, 4]), (7, 7)).shape
    (2, 7, 7, 4)
    """
    op = "adaptive_avg_pool2d"
    _, height, width, _ = check_input(input, 2, op)
    out_height, out_width = expand(output_size, 2, "output_size", op)
    if (out_height, out_width) == (height, width):
        return input  # every bin is one element

    def constant(matrix):
        return from_numpy(matrix, input.dtype, like=input)

    rows = constant(_bin_means(height, out_height))       # (out_h, H)
    columns = constant(_bin_means(width, out_width).T)    # (W, out_w)
    # (N, C, H, W): rows @ x @ columns averages every bin of every channel at once.
    channels_first = transpose(input, (0, 3, 1, 2))
    pooled = matmul(matmul(rows, channels_first), columns)
    return transpose(pooled, (0, 2, 3, 1))
