"""Window geometry shared by convolutions and pools: argument checks, TF and explicit padding.

Turns the user-facing arguments (ints or tuples; ``"same"``, ``"valid"`` or
explicit ``(before, after)`` pairs, one per spatial axis, as
``jax.lax.conv_general_dilated`` takes them) into the static tuples the
primitives and kernels take, and checks shapes so that errors name the op and
the shapes instead of surfacing from a kernel.

Examples
--------
>>> explicit_padding((32, 32), (3, 3), (2, 2), (1, 1), "same", "conv2d")  # TF: odd one after
((0, 1), (0, 1))
>>> explicit_padding((32, 32), (3, 3), (2, 2), (1, 1), ((1, 1), (1, 1)), "conv2d")  # PyTorch's
((1, 1), (1, 1))
"""

from __future__ import annotations

import math

from .._sizes import as_int, per_axis
from .shapes import shape_of

__all__ = ["check_input", "expand", "explicit_padding", "output_size", "padding_pairs",
           "transposed_size"]


def expand(value, n: int, name: str, op: str, minimum: int = 1) -> tuple[int, ...]:
    """``value`` (an int or ``n`` ints) as a tuple of ``n`` ints, each ``>= minimum``."""
    return per_axis(value, n, name, op, minimum)


def check_input(x, spatial: int, op: str) -> tuple[int, ...]:
    """The shape of ``x``, after checking it is ``(batch, *spatial, channels)``."""
    shape = shape_of(x)
    if len(shape) != spatial + 2:
        layout = {1: "(batch, width, channels)", 2: "(batch, height, width, channels)",
                  3: "(batch, depth, height, width, channels)"}[spatial]
        raise ValueError(
            f"{op}: the input must have rank {spatial + 2}, {layout} (channels last); got shape "
            f"{shape}. Add a batch axis with expand_dims(x, 0) for a single example."
        )
    return shape


def padding_pairs(padding, n: int, op: str):
    """``padding`` checked: ``"same"``/``"valid"`` (any case, as lower case) or ``n`` int pairs.

    The one check of a window's padding: every convolution and pool, op
    (:mod:`s4tf.nn`) or layer (at construction and for a call's ``padding=``),
    runs it, so they accept the same forms and fail with the same message,
    naming ``op`` (the op or layer), what it got and what it accepts.
    Explicit pairs come back as a tuple of ``(before, after)`` tuples of ints,
    hashable and static, whatever sequences they were given as.

    Examples
    --------
    >>> padding_pairs([[0, 1], [2, 3]], 2, "conv2d")
    ((0, 1), (2, 3))
    >>> padding_pairs("SAME", 2, "conv2d")
    'same'
    >>> padding_pairs("full", 1, "Conv1D")
    Traceback (most recent call last):
    ValueError: Conv1D: padding must be "same", "valid" or 1 (before, after) pairs of non-negative ints, one per spatial axis, e.g. ((1, 1),); got 'full'. Case does not matter: "SAME" is "same".
    """
    if isinstance(padding, str):
        mode = padding.lower()
        if mode in ("same", "valid"):
            return mode
        raise _padding_error(padding, n, op)
    try:
        pairs = tuple((as_int(before), as_int(after)) for before, after in padding)
    except (TypeError, ValueError):
        pairs = ()
    if len(pairs) != n or any(v is None or v < 0 for pair in pairs for v in pair):
        raise _padding_error(padding, n, op)
    return pairs


def _padding_error(padding, n: int, op: str) -> ValueError:
    return ValueError(
        f'{op}: padding must be "same", "valid" or {n} (before, after) pairs of non-negative '
        f"ints, one per spatial axis, e.g. {((1, 1),) * n}; got {padding!r}. Case does not "
        'matter: "SAME" is "same".'
    )


def output_size(size: int, window: int, stride: int, dilation: int, pads: tuple[int, int]) -> int:
    """The output size of one spatial axis padded by ``pads`` (0 when the window does not fit)."""
    return max(0, (size + sum(pads) - (window - 1) * dilation - 1) // stride + 1)


def explicit_padding(spatial_shape, window, strides, dilations, padding, op: str):
    """``(before, after)`` pairs for TF's ``"same"``/``"valid"`` padding, or the pairs given.

    ``"same"`` pads so that the output has ``ceil(size / stride)`` elements,
    with the odd element after, as TensorFlow does. Explicit pairs are
    checked: the padded input must hold the (dilated) window.
    """
    mode = padding_pairs(padding, len(spatial_shape), op)
    if not isinstance(mode, str):
        for size, k, d, (before, after) in zip(spatial_shape, window, dilations, mode, strict=True):
            extent = (k - 1) * d + 1
            if size + before + after < extent:
                raise ValueError(
                    f"{op}: the (dilated) window {extent} does not fit in the spatial size {size} "
                    f"padded by ({before}, {after}), of input spatial shape "
                    f"{tuple(spatial_shape)}; pad more or use a larger input."
                )
        return mode
    pairs = []
    for size, k, s, d in zip(spatial_shape, window, strides, dilations, strict=True):
        extent = (k - 1) * d + 1
        if mode == "valid":
            if size < extent:
                raise ValueError(
                    f'{op}: with "valid" padding the (dilated) window {extent} does not fit in '
                    f"the spatial size {size} of input shape {tuple(spatial_shape)}; use "
                    '"same" padding or a larger input.'
                )
            pairs.append((0, 0))
            continue
        total = max((math.ceil(size / s) - 1) * s + extent - size, 0)
        pairs.append((total // 2, total - total // 2))
    return tuple(pairs)


def transposed_size(size: int, window: int, stride: int, dilation: int, padding) -> int:
    """The output size of a transposed convolution when none is given.

    ``padding`` is ``"same"``/``"valid"`` (Keras's rule) or this axis's
    explicit ``(before, after)`` pair of the forward convolution (the
    smallest size whose forward convolution has ``size`` outputs, as
    ``jax.lax.conv_transpose`` gives; it may be below 1 when the padding
    exceeds the window, which the caller reports).
    """
    extent = (window - 1) * dilation + 1
    if padding == "same":
        return size * stride
    if padding == "valid":
        return size * stride + max(extent - stride, 0)
    return (size - 1) * stride + extent - sum(padding)
