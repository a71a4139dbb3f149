"""Channel rounding shared by MobileNetV2/V3 and EfficientNet (torchvision's ``_make_divisible``)."""

from __future__ import annotations

__all__ = ["make_divisible"]


def make_divisible(value: float, divisor: int = 8, min_value: int | None = None) -> int:
    """``value`` rounded to the nearest multiple of ``divisor``, never more than 10% down.

    The TF-slim MobileNet rule that torchvision copies; the parameter counts
    in docs/guides/model-zoo.md at other width multipliers depend on it exactly.

    Examples
    --------
    >>> from s4tf.models._divisible import make_divisible
    >>> make_divisible(32 * 0.75), make_divisible(16 * 0.35), make_divisible(92 * 0.5)
    (24, 8, 48)
    """
    min_value = divisor if min_value is None else min_value
    rounded = max(min_value, int(value + divisor / 2) // divisor * divisor)
    if rounded < 0.9 * value:
        rounded += divisor
    return rounded
