"""Window geometry shared by convolutions and pools: argument checks, TF padding.

Turns the user-facing arguments (ints or tuples, ``"same"``/``"valid"``)
into the static tuples the primitives and kernels take, and checks shapes so
that errors name the op and the shapes instead of surfacing from a kernel.
"""

from __future__ import annotations

import math

from .._sizes import per_axis
from .shapes import shape_of

__all__ = ["check_input", "expand", "explicit_padding", "output_size", "transposed_size"]


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


def _padding_mode(padding, op: str) -> str:
    mode = padding.lower() if isinstance(padding, str) else padding
    if mode not in ("same", "valid"):
        raise ValueError(f'{op}: padding must be "same" or "valid"; got {padding!r}.')
    return mode


def output_size(size: int, window: int, stride: int, dilation: int, mode: str) -> int:
    """TF's output size of one spatial axis (0 when the window does not fit)."""
    if mode == "same":
        return math.ceil(size / stride)
    return max(0, (size - (window - 1) * dilation - 1) // stride + 1)


def explicit_padding(spatial_shape, window, strides, dilations, padding, op: str):
    """``(before, after)`` pairs for TF's ``"same"``/``"valid"`` padding.

    ``"same"`` pads so that the output has ``ceil(size / stride)`` elements,
    with the odd element after, as TensorFlow does.
    """
    mode = _padding_mode(padding, op)
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


def transposed_size(size: int, window: int, stride: int, dilation: int, padding, op: str) -> int:
    """The output size of a transposed convolution when none is given (Keras's rule)."""
    mode = _padding_mode(padding, op)
    if mode == "same":
        return size * stride
    extent = (window - 1) * dilation + 1
    return size * stride + max(extent - stride, 0)
