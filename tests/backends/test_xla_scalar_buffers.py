"""Host scalars' device buffers are reused across barriers, also when two programs alternate."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jax")


def test_two_alternating_programs_keep_their_scalar_buffers():
    # TrainingLoop's captured step and its metric sums run one after the other every step;
    # each must find its own values from the step before, not put them on the device again.
    from s4tf.backends.xla.scalar_buffers import device_buffers

    step = [np.float32(0.123), np.float32(0.9)]
    metrics = [np.float32(128.0)]
    first = device_buffers(step), device_buffers(metrics)
    for _ in range(3):
        again = device_buffers(step), device_buffers(metrics)
        assert all(a is b for a, b in zip(first[0] + first[1], again[0] + again[1], strict=True))


def test_a_value_unused_for_a_few_barriers_is_let_go():
    from s4tf.backends.xla import scalar_buffers

    old = np.float32(-7.25)
    buffer, = scalar_buffers.device_buffers([old])
    for k in range(scalar_buffers.GENERATIONS):
        scalar_buffers.device_buffers([np.float32(k)])
    assert scalar_buffers.device_buffers([old])[0] is not buffer
    assert scalar_buffers.cached_count() <= scalar_buffers.GENERATIONS * 2
