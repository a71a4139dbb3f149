"""Copy-on-write with consumption, decided by CPython reference counts.

An update (``opt.update(model, grads)``, ``value.moved(along=)``) writes a
buffer in place only when nothing but the model can see it, and consumes a
model it changes in place (see :mod:`.consumed`); anything someone else can
still see is copied and stays exactly as it was. :mod:`s4tf.liveness` measures
the counts that mean "only one owner" for this interpreter, ``walk`` checks
every object on the path to each buffer and rebuilds the new value,
``holders`` explains copies under ``S4TF_DEBUG=1``, ``callsite`` reads the caller's
bytecode to tell ``model = opt.update(model, g)`` from ``m =
opt.update(models[0], g)`` (the list keeps its model: copy), ``interrupts``
holds Ctrl-C back until an update is over, and ``update`` runs one update
(an :class:`UpdateRequest`) for every entry point.
"""

from __future__ import annotations

from .engine import UpdateRequest, copy_reason, mode, root_is_unique, update
from .holders import debug_enabled, report_copy
from .walk import Analysis, analyze, calibrate_inner, rebuild, rebuild_consumed

__all__ = [
    "Analysis", "UpdateRequest", "analyze", "copy_reason", "debug_enabled", "mode", "rebuild",
    "rebuild_consumed", "report_copy", "root_is_unique", "update",
]

calibrate_inner()
