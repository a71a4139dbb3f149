"""Every primitive that ``s4tf.ops`` exports with rules has cases that exercise them.

A transformation is checked by the rules it reads from each primitive (its rule
table: ``vjp`` for reverse mode, ``jvp`` for forward mode), the trace that
applies them, and the cases that exercise it (``CASES`` of
``tests/ops/test_op_gradients.py``). Running every case once under the trace
records the primitives it met; a primitive with rules that no case meets is
named. Another transformation adds a row to ``TRANSFORMATIONS`` with its
table, its trace, its cases and the primitives it covers.

Batching (``s4tf.vmap``) covers every primitive of the package, exported or
not (``matmul_nt``, ``dense``, the convolutions' backward ops): each must have
a batching rule, and each rule a case in ``BATCH_CASES`` of
``tests/ops/test_op_batching.py``.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import s4tf
from s4tf.autodiff.batching import BatchTrace
from s4tf.autodiff.forward import ForwardTrace
from s4tf.autodiff.reverse import ReverseTrace
from s4tf.ops.primitive import Primitive
from s4tf.testing import check_gradients

from .test_op_batching import BATCH_CASES
from .test_op_batching import _axes as batch_axes
from .test_op_gradients import CASES as GRADIENT_CASES


def _run_gradient(mode):
    def run(case):
        f, points = case
        check_gradients(f, *points, modes=(mode,))
    return run


def _run_batched(case):
    f, args, in_axes = case
    s4tf.vmap(f, in_axes=batch_axes(in_axes, args))(*args)


def exported_primitives() -> dict[str, Primitive]:
    """The primitives ``s4tf.ops`` exports, by name."""
    return {name: op for name, op in vars(s4tf.ops).items()
            if name in s4tf.ops.__all__ and isinstance(op, Primitive)}


def package_primitives() -> dict[str, Primitive]:
    """Every primitive the modules of ``s4tf.ops`` define, exported or not, by name."""
    found = {}
    for info in pkgutil.iter_modules(s4tf.ops.__path__):
        module = importlib.import_module(f"s4tf.ops.{info.name}")
        for value in vars(module).values():
            if isinstance(value, Primitive) and value.__module__ == module.__name__:
                found[value.name] = value
    return found


# name: (rule attribute, trace class, cases, how one case is run, the primitives covered)
TRANSFORMATIONS = {
    "reverse": ("vjp", ReverseTrace, GRADIENT_CASES, _run_gradient("reverse"),
                exported_primitives),
    "forward": ("jvp", ForwardTrace, GRADIENT_CASES, _run_gradient("forward"),
                exported_primitives),
    "batch": ("batch", BatchTrace, BATCH_CASES, _run_batched, package_primitives),
}


def primitives_with_rules(table: str, primitives=exported_primitives) -> dict[str, Primitive]:
    """The primitives (of ``primitives()``) whose rule ``table`` is defined, by name."""
    return {name: op for name, op in primitives().items() if getattr(op, table) is not None}


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
    table, trace_class, cases, run, primitives = TRANSFORMATIONS[transformation]
    expected = primitives_with_rules(table, primitives)
    # A known primitive is found (an unexported one among all of the package's): the
    # listing itself works.
    assert "exp" in expected
    assert ("matmul_tn" if primitives is package_primitives else "scatter_add") in expected
    met = primitives_met(trace_class, cases, run, monkeypatch)
    missing = sorted(name for name, op in expected.items() if op not in met)
    where = ("BATCH_CASES in tests/ops/test_op_batching.py" if table == "batch" else
             "CASES in tests/ops/test_op_gradients.py")
    assert not missing, (
        f"no {transformation}-mode case exercises the {table} rules of {missing}: add a case "
        f"that applies each to a value being transformed ({where})."
    )


OPS_MODULES = [info.name for info in pkgutil.iter_modules(s4tf.ops.__path__)]


@pytest.mark.parametrize("module", OPS_MODULES)
def test_every_primitive_has_a_batching_rule(module):
    name = f"s4tf.ops.{module}"
    without = sorted(op.name for op in package_primitives().values()
                     if op.__module__ == name and op.batch is None)
    assert not without, (
        f"the primitives {without} of {name} have no batching rule, so s4tf.vmap cannot run "
        "them: give each primitive(..., batch=rule) (s4tf/ops/batching_helpers.py has the "
        "shared rules) and a case in BATCH_CASES (tests/ops/test_op_batching.py)."
    )


def test_the_check_names_a_primitive_without_a_case(monkeypatch):
    table, trace_class, cases, run, _ = TRANSFORMATIONS["reverse"]
    without_tan = {name: case for name, case in cases.items() if name != "tan"}
    met = primitives_met(trace_class, without_tan, run, monkeypatch)
    assert s4tf.ops.tan not in met and s4tf.ops.tanh in met


def test_the_batching_check_names_a_primitive_without_a_case(monkeypatch):
    table, trace_class, cases, run, _ = TRANSFORMATIONS["batch"]
    without_argmin = {name: case for name, case in cases.items() if name != "argmin"}
    met = primitives_met(trace_class, without_argmin, run, monkeypatch)
    primitives = package_primitives()
    assert primitives["argmin"] not in met and primitives["argmax"] in met
