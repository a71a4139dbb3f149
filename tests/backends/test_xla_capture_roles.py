"""Captured steps' roles (s4tf/capture/roles.py): a replay reuses only what nobody else holds."""

from __future__ import annotations

import numpy as np
import pytest

import s4tf

pytest.importorskip("jax")


class Line(s4tf.Differentiable):
    w: s4tf.Tensor


def test_a_slot_somebody_kept_is_not_donated_and_keeps_its_value():
    # A replay may give XLA an old slot's buffer only when its optimizer alone holds the slot.
    with s4tf.backend("xla"):
        model = Line(s4tf.Tensor([1.0, 2.0, 3.0]))
        grads = Line.TangentVector(w=s4tf.Tensor([1.0, 1.0, 1.0]))
    opt = s4tf.optimizers.SGD(model, learning_rate=0.1, momentum=0.9)

    def update(model, grads):
        return opt.update(model, grads)

    step = s4tf.xla.compile(update, verify_first=0)  # replays from the second call

    model = step(model, grads)
    model = step(model, grads)  # replays
    kept = opt.slots(0)["velocity"]  # the slot tensor, held here as well
    before = kept.numpy().tolist()
    model = step(model, grads)
    s4tf.barrier()
    assert step.body_runs == 1
    assert kept.numpy().tolist() == before  # still readable, unchanged
    assert not np.array_equal(opt.slots(0)["velocity"].numpy(), before)
