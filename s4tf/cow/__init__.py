"""Copy-on-write with consumption, decided by CPython reference counts.

An update (``opt.update(model, grads)``, ``value.moved(along=)``) writes a
buffer in place only when nothing but the model can see it, and consumes a
model it changes in place (see :mod:`.consumed`); anything someone else can
still see is copied and stays exactly as it was. ``calibration`` measures the
counts that mean "only one owner" for this interpreter, ``walk`` checks every
object on the path to each buffer and rebuilds the new value, ``holders``
explains copies under ``S4TF_DEBUG=1``, ``frames`` finds the names that
borrowed references hide (CPython 3.14+), ``callsite`` reads the caller's
bytecode to tell ``model = opt.update(model, g)`` from ``m =
opt.update(models[0], g)`` (the list keeps its model: copy), ``interrupts``
holds Ctrl-C back until an update is over, and ``update`` runs one update for
every entry point.
"""

from __future__ import annotations

from .calibration import RootBaseline, calibrate_root, in_place_supported, mode, record_probe
from .engine import copy_reason, root_is_unique, update
from .holders import debug_enabled, report_copy
from .walk import Analysis, analyze, calibrate_inner, rebuild, rebuild_consumed

__all__ = [
    "Analysis", "RootBaseline", "analyze", "calibrate_root", "copy_reason", "debug_enabled",
    "in_place_supported", "mode", "rebuild", "rebuild_consumed", "record_probe", "report_copy",
    "root_is_unique", "update",
]

calibrate_inner()
