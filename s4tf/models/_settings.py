"""Validation of the block tables that zoo constructors accept (torchvision's ``*_setting``)."""

from __future__ import annotations

__all__ = ["check_settings"]


def check_settings(model: str, name: str, settings, layout: str) -> tuple[tuple, ...]:
    """``settings`` as a tuple of tuples, each as long as ``layout`` names fields.

    Examples
    --------
    >>> from s4tf.models._settings import check_settings
    >>> check_settings("M", "block_settings", [(1, 16, 1, 1)], "(t, c, n, s)")
    ((1, 16, 1, 1),)
    """
    width = layout.count(",") + 1
    try:
        rows = tuple(tuple(row) for row in settings)
    except TypeError:
        rows = ()
    if not rows or any(len(row) != width for row in rows):
        raise ValueError(f"{model}: {name} must be a non-empty sequence of {layout} tuples, "
                         f"got {settings!r}.")
    return rows
