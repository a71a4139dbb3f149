"""trainable= inside a captured step (s4tf.xla.compile); param_groups refused there."""

import numpy as np
import pytest
from test_param_groups import arrays, gradient_of, make_net

import s4tf
from s4tf import optimizers

pytest.importorskip("jax")


def test_frozen_parameters_stay_frozen_in_a_captured_step_and_groups_are_refused_there():
    with s4tf.backend("xla"):
        model = make_net()
        opt = optimizers.Adam(model, learning_rate=0.1, trainable=["head"])

        @s4tf.xla.compile
        def step(model):
            return opt.update(model, gradient_of(model))

        before = arrays(model)
        for _ in range(4):  # capture, two verifying runs, a replay
            model = step(model)
        after = arrays(model)
        assert step.body_runs == 3
        np.testing.assert_array_equal(after["body.weight"], before["body.weight"])
        assert not np.allclose(after["head.weight"], before["head.weight"])
        grouped = optimizers.SGD(model, param_groups=[{"params": "head", "learning_rate": 0.5}])
        with pytest.raises(NotImplementedError,
                           match="param_groups cannot run inside s4tf.xla.compile"):
            s4tf.xla.compile(lambda m: grouped.update(m, gradient_of(m), consume=False))(model)
