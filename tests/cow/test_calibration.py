"""Reference-count calibration: baselines per holder kind, and the safe fallbacks."""

import sys

import pytest

import s4tf
from s4tf import liveness
from s4tf.cow import callsite, copy_reason, moving
from s4tf.optimizers import application


def honest_entry(value):
    count = sys.getrefcount(value)
    if liveness.probing is not None:
        liveness.record_probe(value, count, sys._getframe(1))


def blind_entry(value):
    # Measures a count that ignores the caller: one more holder does not show.
    count = sys.getrefcount(object())
    if liveness.probing is not None:
        liveness.record_probe(value, count, sys._getframe(1))


def test_the_entry_points_are_calibrated_on_this_interpreter():
    if not liveness.counts_trusted():
        pytest.skip("reference counts are not trusted on this interpreter (copying is used)")
    for baseline in (application.ROOT_BASELINE, moving._BASELINES[callsite.MOVED],
                     moving._BASELINES[callsite.MOVED_METHOD]):
        assert isinstance(baseline, liveness.RootBaseline)
        assert baseline.borrowing == (baseline.local < baseline.namespace)


def test_an_entry_that_cannot_see_an_alias_is_never_trusted():
    assert liveness.calibrate_root(honest_entry, make=object, calls=["entry({value})"])
    assert liveness.calibrate_root(blind_entry, make=object, calls=["entry({value})"]) is None


def test_an_interpreter_without_trusted_counts_always_copies(monkeypatch):
    monkeypatch.setattr(liveness, "counts_trusted", lambda: False)
    assert liveness.calibrate_root(honest_entry, make=object, calls=["entry({value})"]) is None


def test_borrowing_rule_tells_the_caller_from_a_helper():
    # The rule for interpreters that borrow references (3.14+), exercised here with
    # limits that accept this interpreter's counts, so only the frame walk decides.
    value = object()
    count = sys.getrefcount(value)
    rule = liveness.RootBaseline(local=count, namespace=count, other=count, borrowing=True)
    assert rule.allows(value, count, sys._getframe())

    def helper(v):
        return rule.allows(v, count, sys._getframe())

    assert not helper(value)  # this test's frame also names it


def test_frames_name_each_kind_of_holder():
    value = object()
    assert liveness.holder_kind(value, sys._getframe()) == "local"
    namespace = {"liveness": liveness, "sys": sys, "make": object}
    exec("value = make()\nkind = liveness.holder_kind(value, sys._getframe())", namespace)
    assert namespace["kind"] == "namespace"

    class Holder:
        pass

    def nameless(holder):
        return liveness.holder_kind(holder.value, sys._getframe())

    holder = Holder()
    holder.value = object()
    assert nameless(holder) == "none"

    def inner(v):
        return liveness.holder_kind(v, sys._getframe())

    assert inner(value) == "several"


def test_copy_reason_names_each_cause(monkeypatch):
    value = [s4tf.ones([2])]  # a list is never consumed: only Differentiable models are
    rule = liveness.RootBaseline(local=1, namespace=1, other=1, borrowing=False)
    assert "consume=False" in copy_reason(value, rule, consume=False)
    assert "cannot be consumed" in copy_reason(value, rule, consume=True)
    assert "calibration failed" in copy_reason(value, None, consume=True)
    monkeypatch.setenv("S4TF_COPY_ON_WRITE", "always-copy")
    assert "always-copy" in copy_reason(value, rule, consume=True)
