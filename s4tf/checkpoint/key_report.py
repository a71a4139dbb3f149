"""One wording for "this file does not fit that model": missing, unexpected and mis-shaped keys."""

from __future__ import annotations

__all__ = ["mismatch_lines"]


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
