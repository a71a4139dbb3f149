"""A captured step keys its captures on the precision policy, as on the learning phase."""

import numpy as np
import pytest

import s4tf
from s4tf import layers

pytest.importorskip("jax")


def test_a_step_captured_under_one_policy_does_not_replay_under_another():
    with s4tf.backend("xla"):
        s4tf.random.seed(0)
        model = layers.Dense(4, 3)
        x = s4tf.random.normal([2, 4])

    step = s4tf.xla.compile(lambda m, x: m(x), verify_first=0)
    plain = [step(model, x).numpy() for _ in range(2)]
    with s4tf.precision.policy("mixed_bfloat16"):
        low = step(model, x)
        assert low.dtype == s4tf.bfloat16
        expected = model(x).numpy()
    assert step.body_runs == 2  # one capture per policy
    np.testing.assert_array_equal(low.numpy(), expected)
    assert plain[0].dtype == np.float32
    np.testing.assert_array_equal(step(model, x).numpy(), plain[0])  # float32 replays again
    assert step.body_runs == 2
