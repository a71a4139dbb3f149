"""Copy-on-write with consumption, decided by CPython reference counts.

An update (``opt.update(model, grads)``, ``value.moved(along=)``) writes a
buffer in place only when nothing but the model can see it, and consumes a
model it changes in place (see :mod:`s4tf.consumed`); anything someone else can
still see is copied and stays exactly as it was. ``calibration`` measures the
counts that mean "only one owner" for this interpreter, ``walk`` checks every
object on the path to each buffer and rebuilds the new value, ``holders``
explains copies under ``S4TF_DEBUG=1``.
"""

from __future__ import annotations

from ..consumed import can_consume
from ..differentiable import Differentiable
from .calibration import calibrate_root, in_place_supported, mode, record_probe
from .holders import debug_enabled, report_copy
from .walk import Analysis, analyze, calibrate_inner, rebuild, rebuild_consumed

__all__ = [
    "Analysis", "analyze", "calibrate_root", "copy_reason", "debug_enabled", "in_place_supported", "mode",
    "rebuild", "rebuild_consumed", "record_probe", "report_copy", "root_is_unique",
]


def root_is_unique(value, count: int, baseline: int | None, consume: bool) -> bool:
    """Whether an entry point may consume ``value``, given the count it measured.

    Examples
    --------
    >>> from s4tf.cow import root_is_unique
    >>> root_is_unique([1.0], count=3, baseline=None, consume=True)
    False
    """
    return (
        consume
        and baseline is not None
        and count <= baseline
        and isinstance(value, Differentiable)
        and can_consume(value)
        and mode() == "auto"
        and in_place_supported()
    )


def copy_reason(value, count: int, baseline: int | None, consume: bool) -> str | None:
    """Why an update copies regardless of who holds ``value``; ``None`` if holders decide."""
    if not consume:
        return "consume=False was passed"
    if mode() != "auto":
        return "S4TF_COPY_ON_WRITE=always-copy is set"
    if not in_place_supported():
        return "this interpreter's reference counts cannot prove uniqueness (copying is safe)"
    if baseline is None:
        return "reference-count calibration failed on this interpreter (copying is safe)"
    if not (isinstance(value, Differentiable) and can_consume(value)):
        return (f"a {type(value).__name__} cannot be consumed; only s4tf.Differentiable models "
                "are updated in place")
    return None


calibrate_inner()
