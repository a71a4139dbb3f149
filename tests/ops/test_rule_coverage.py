"""Every primitive that ``s4tf.ops`` exports with rules has cases that exercise them.

A transformation is checked by the rules it reads from each primitive (its rule
table: ``vjp`` for reverse mode, ``jvp`` for forward mode), the trace that
applies them, and the cases that exercise it (``CASES`` of
``tests/ops/test_op_gradients.py``). Running every case once under the trace
records the primitives it met; a primitive with rules that no case meets is
named. Another transformation (batching rules, say) adds a row to
``TRANSFORMATIONS`` with its table, its trace and its cases.
"""

from __future__ import annotations

import pytest

import s4tf
from s4tf.autodiff.forward import ForwardTrace
from s4tf.autodiff.reverse import ReverseTrace
from s4tf.ops.primitive import Primitive
from s4tf.testing import check_gradients

from .test_op_gradients import CASES as GRADIENT_CASES


def _run_gradient(mode):
    def run(case):
        f, points = case
        check_gradients(f, *points, modes=(mode,))
    return run


# name: (rule table attribute, trace class, cases, how one case is run)
TRANSFORMATIONS = {
    "reverse": ("vjp", ReverseTrace, GRADIENT_CASES, _run_gradient("reverse")),
    "forward": ("jvp", ForwardTrace, GRADIENT_CASES, _run_gradient("forward")),
}


def primitives_with_rules(table: str) -> dict[str, Primitive]:
    """The primitives ``s4tf.ops`` exports whose rule table ``table`` is defined, by name."""
    return {name: op for name, op in vars(s4tf.ops).items()
            if name in s4tf.ops.__all__ and isinstance(op, Primitive)
            and getattr(op, table) is not None}


def primitives_met(trace_class, cases, run, monkeypatch) -> set[Primitive]:
    """The primitives ``trace_class`` processes while ``run`` runs each of ``cases``."""
    met = set()
    for method in ("process", "process_binary"):
        original = getattr(trace_class, method)

        def recording(self, primitive, *args, _original=original):
            met.add(primitive)
            return _original(self, primitive, *args)

        monkeypatch.setattr(trace_class, method, recording)
    with s4tf.backend("naive"):
        for case in cases.values():
            run(case)
    return met


@pytest.mark.parametrize("transformation", sorted(TRANSFORMATIONS))
def test_every_primitive_with_rules_has_a_case(transformation, monkeypatch):
    table, trace_class, cases, run = TRANSFORMATIONS[transformation]
    expected = primitives_with_rules(table)
    assert "exp" in expected and "scatter_add" in expected
    met = primitives_met(trace_class, cases, run, monkeypatch)
    missing = sorted(name for name, op in expected.items() if op not in met)
    assert not missing, (
        f"no {transformation}-mode case exercises the {table} rules of {missing}: add a case "
        "that applies each to a value being differentiated (CASES in "
        "tests/ops/test_op_gradients.py)."
    )


def test_the_check_names_a_primitive_without_a_case(monkeypatch):
    table, trace_class, cases, run = TRANSFORMATIONS["reverse"]
    without_tan = {name: case for name, case in cases.items() if name != "tan"}
    met = primitives_met(trace_class, without_tan, run, monkeypatch)
    assert s4tf.ops.tan not in met and s4tf.ops.tanh in met
