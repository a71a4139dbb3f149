"""One wording for "this file does not fit that model": missing, unexpected and mis-shaped keys.

The loaders of other libraries' weights (torchvision, GPT-2) also share here
how a file's tensors become the model's floating dtype.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import as_dtype

__all__ = ["as_float_weights", "mismatch_lines"]


def mismatch_lines(missing, unexpected, misshaped, *,
                   missing_means: str = "the model needs them, the file lacks them",
                   unexpected_means: str = "in the file, no place in the model",
                   misshaped_means: str = "") -> list[str]:
    """The indented lines of a key-mismatch error, one per non-empty kind.

    Every loader (``s4tf.load(like=)``, torchvision and GPT-2 weights) lists
    what does not fit the same way, so a user reads one format everywhere.

    Examples
    --------
    >>> mismatch_lines(["fc.bias"], [], ["fc.weight: file has (3,), needs (2,)"])
    ['  missing keys (the model needs them, the file lacks them): fc.bias', '  mis-shaped keys:\\n    fc.weight: file has (3,), needs (2,)']
    """
    lines = []
    if missing:
        lines.append(f"  missing keys ({missing_means}): {', '.join(missing)}")
    if unexpected:
        lines.append(f"  unexpected keys ({unexpected_means}): {', '.join(unexpected)}")
    if misshaped:
        label = f"mis-shaped keys ({misshaped_means})" if misshaped_means else "mis-shaped keys"
        lines.append(f"  {label}:\n    " + "\n    ".join(misshaped))
    return lines


_TO_FLOAT = ("save floating-point weights: model.float() on the PyTorch side (dequantize a "
             "quantized model first), then save_file again")


def as_float_weights(arrays: dict, dtypes: dict, fields: dict | None = None) -> tuple[dict, list[str]]:
    """``arrays`` cast to ``dtypes`` (both keyed by the file's names), and the lines of what cannot be.

    A weight is cast only from floating point: an integer or bool tensor (a
    quantized or mislabelled export) would load as nonsense. A value finite in
    the file must stay finite in the model's dtype (float64's ``1e39`` is
    ``inf`` in float32). ``fields`` (file key -> the model field it fills)
    adds ``(-> field)`` to each line. The lines say how to fix the file.

    Examples
    --------
    >>> import numpy as np
    >>> converted, lines = as_float_weights(
    ...     {"fc.weight": np.ones(2), "fc.bias": np.ones(2, np.int8)},
    ...     {"fc.weight": np.float32, "fc.bias": np.float32})
    >>> converted["fc.weight"].dtype
    dtype('float32')
    >>> lines[0].split(" (")[0]
    '  keys that are not floating point: fc.bias: int8'
    """
    fields = fields or {}
    converted, not_float, overflowing = {}, [], []
    for key, array in arrays.items():
        target = np.dtype(dtypes[key])
        if not _floating(array.dtype):
            not_float.append(f"{key}: {array.dtype}" + _field(fields, key))
            continue
        with np.errstate(over="ignore"):  # an overflow is reported below, not warned about
            cast = np.asarray(array, dtype=target)
        if not np.isfinite(cast).all():
            grown = np.isfinite(array) & ~np.isfinite(cast)
            if grown.any():
                largest = float(np.abs(array[grown].astype(np.float64)).max())
                overflowing.append(f"{key}: {array.dtype} up to {largest:.2g}, {target} holds up "
                                   f"to {_largest(target):.2g}" + _field(fields, key))
        converted[key] = cast
    lines = []
    if not_float:
        lines.append(f"  keys that are not floating point: {', '.join(not_float)} ({_TO_FLOAT})")
    if overflowing:
        lines.append("  values too large for the model's dtype (they would become inf): "
                     f"{', '.join(overflowing)} (trained weights are far smaller: the file is "
                     "damaged or was not written from the model's weights; export it again)")
    return converted, lines


def _floating(dtype) -> bool:
    try:
        return as_dtype(dtype).is_floating  # bfloat16 is not a NumPy floating type
    except TypeError:
        return False


def _largest(dtype) -> float:
    try:
        return float(np.finfo(dtype).max)
    except ValueError:
        import ml_dtypes  # bfloat16 is ml_dtypes', and so is the record of its range

        return float(ml_dtypes.finfo(dtype).max)


def _field(fields: dict, key: str) -> str:
    return f" (-> {fields[key]})" if key in fields else ""
