"""s4tf.xla.lower: the StableHLO of the step a function compiles (paper, Figure 4)."""

from __future__ import annotations

import pytest

import s4tf
from s4tf import layers, optimizers
from s4tf.testing import assert_allclose

pytest.importorskip("jax")

from s4tf.backends.xla import graph  # noqa: E402


def _model():
    s4tf.random.seed(0)
    return s4tf.to_backend(layers.Sequential(layers.Dense(3, 4, activation=s4tf.relu),
                                             layers.Dense(4, 2)), "xla")


def test_a_training_step_shows_forward_backward_and_update_and_still_runs():
    model = _model()
    expected_model = s4tf.to_backend(model, "naive")
    opt, expected_opt = (optimizers.SGD(m, learning_rate=0.5) for m in (model, expected_model))
    x = s4tf.to_backend(s4tf.random.normal([5, 3]), "xla")
    results = []

    def step(model, x):
        loss, grads = s4tf.value_with_gradient(model, of=lambda m: (m(x) ** 2).mean())
        results.append(opt.update(model, grads))  # kept: the update is part of the step
        return loss

    pending_before = s4tf.ones([2]) * 3.0  # work from before the step is not part of it
    text = s4tf.xla.lower(step, model, x)
    main = text.split("func.func public @main")[1]
    assert text.startswith("module @")
    assert main.count("stablehlo.dot_general") == 5  # 2 forward; backward: 2 weights, 1 input
    assert "stablehlo.compare" in main  # relu's mask
    # Outputs: the loss and the four new parameters.
    assert '"result[4]"' in main and '"result[5]"' not in main
    assert graph.pending_count() == 0 and pending_before.tolist() == [3.0, 3.0]
    # The step ran as a call would have: its results hold the updated values.
    loss, grads = s4tf.value_with_gradient(expected_model,
                                           of=lambda m: (m(x.to("naive")) ** 2).mean())
    expected_model = expected_opt.update(expected_model, grads)
    assert_allclose(results[0].layers[0].weight, expected_model.layers[0].weight,
                    rtol=1e-5, atol=1e-6)


def test_remat_puts_optimization_barriers_in_the_step():
    model = _model()
    checkpointed = layers.Sequential(model.layers, checkpoint=True)
    x = s4tf.to_backend(s4tf.ones([5, 3]), "xla")
    loss = lambda m: m(x).sum()  # noqa: E731
    assert "optimization_barrier" not in s4tf.xla.lower(s4tf.gradient(of=loss), model)
    assert "optimization_barrier" in s4tf.xla.lower(s4tf.gradient(of=loss), checkpointed)


def test_a_function_recording_nothing_is_explained():
    with pytest.raises(ValueError, match="recorded no operation on the xla backend"):
        s4tf.xla.lower(lambda x: x * 2.0, s4tf.ones([2]).to("naive"))
