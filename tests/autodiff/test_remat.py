"""s4tf.remat and Sequential(checkpoint=True): same derivatives, fewer kept intermediates."""

import tracemalloc

import numpy as np
import pytest

import s4tf
from s4tf import layers
from s4tf.autodiff.reverse import ReverseTrace
from s4tf.ops.optimization_barrier import optimization_barrier
from s4tf.testing import assert_allclose


def _block(x):
    return s4tf.tanh(s4tf.sin(x) * 2.0 + x * x)


def _mlp(depth=3, width=4, seed=0, **kwargs):
    s4tf.random.seed(seed)
    return layers.Sequential([layers.Dense(width, width, activation=s4tf.gelu)
                              for _ in range(depth)], **kwargs)


def _tree_close(a, b):
    for x, y in zip(s4tf.tree_leaves(a), s4tf.tree_leaves(b), strict=True):
        assert_allclose(x, y, rtol=1e-6, atol=1e-7)


@pytest.mark.usefixtures("backend")
class TestSameDerivatives:
    def test_function_of_a_tensor(self):
        x = s4tf.Tensor([0.5, -1.0, 2.0])
        plain = s4tf.value_with_gradient(x, of=lambda x: _block(x).sum())
        remat = s4tf.value_with_gradient(x, of=lambda x: s4tf.remat(_block)(x).sum())
        _tree_close(plain, remat)

    def test_a_layer_its_method_and_keywords(self):
        model = _mlp()
        x = s4tf.random.normal([2, 4])
        expected = s4tf.gradient(model, x, of=lambda m, x: m(x).sum())
        _tree_close(expected, s4tf.gradient(model, x, of=lambda m, x: s4tf.remat(m)(x).sum()))
        _tree_close(expected, s4tf.gradient(
            model, x, of=lambda m, x: s4tf.remat(m.__call__)(x).sum()))
        _tree_close(expected, s4tf.gradient(
            model, x, of=lambda m, x: s4tf.remat(lambda m, *, x: m(x))(m, x=x).sum()))

    def test_several_results_recompute_once(self):
        calls = []

        def two(x, y):
            calls.append(1)
            return {"s": s4tf.sin(x) * y, "c": (s4tf.cos(x), 3)}

        def loss(f):
            return lambda x, y: (lambda r: (r["s"] * r["c"][0]).sum() + r["c"][1])(f(x, y))

        x, y = s4tf.Tensor([0.3, 1.2]), s4tf.Tensor([2.0, -1.0])
        expected = s4tf.gradient(x, y, of=loss(two))
        calls.clear()
        _tree_close(expected, s4tf.gradient(x, y, of=loss(s4tf.remat(two))))
        assert len(calls) == 2  # the forward pass and one recomputation

    def test_a_result_the_loss_ignores(self):
        x = s4tf.Tensor([0.3, 1.2])
        pair = s4tf.remat(lambda x: (s4tf.sin(x), s4tf.cos(x)))
        assert_allclose(s4tf.gradient(x, of=lambda x: pair(x)[1].sum()), -np.sin([0.3, 1.2]),
                        rtol=1e-6)

    def test_second_order_and_forward_mode(self):
        cube = s4tf.remat(lambda y: y * y * y)
        assert s4tf.gradient(0.5, of=s4tf.gradient(of=cube)) == pytest.approx(3.0)
        assert s4tf.derivative(0.5, of=s4tf.gradient(of=cube)) == pytest.approx(3.0)
        assert s4tf.gradient(0.5, of=s4tf.derivative(of=cube)) == pytest.approx(3.0)
        x = s4tf.Tensor([0.5, -1.0])
        hessian_row = s4tf.gradient(x, of=lambda x: s4tf.gradient(
            x, of=lambda x: s4tf.remat(_block)(x).sum())[0])
        expected = s4tf.gradient(x, of=lambda x: s4tf.gradient(x, of=lambda x: _block(x).sum())[0])
        assert_allclose(hessian_row, expected, rtol=1e-5)

    def test_composes_with_vmap_both_ways(self):
        plain = _mlp()
        checkpointed = layers.Sequential(plain.layers, checkpoint=True)
        x, y = s4tf.random.normal([5, 4]), s4tf.random.normal([5, 4])

        def loss(m, x, y):
            return ((m(s4tf.expand_dims(x, 0)) - y) ** 2).sum()

        per_example = s4tf.vmap(s4tf.gradient(of=loss), in_axes=(None, 0, 0))
        expected = per_example(plain, x, y)[0]
        assert expected.layers[0].weight.shape == (5, 4, 4)
        _tree_close(expected, per_example(checkpointed, x, y)[0])

        def batched_loss(call):
            return lambda m: s4tf.vmap(lambda x: call(m, x).sum())(x).sum()

        _tree_close(s4tf.gradient(plain, of=batched_loss(lambda m, x: m(s4tf.expand_dims(x, 0)))),
                    s4tf.gradient(plain, of=batched_loss(
                        lambda m, x: s4tf.remat(lambda m, x: m(s4tf.expand_dims(x, 0)))(m, x))))

    def test_sequential_checkpoint(self):
        plain = _mlp()
        checkpointed = layers.Sequential(plain.layers, checkpoint=True)
        x = s4tf.random.normal([3, 4])
        assert checkpointed.checkpoint and not plain.checkpoint
        _tree_close(s4tf.value_with_gradient(plain, of=lambda m: (m(x) ** 2).mean()),
                    s4tf.value_with_gradient(checkpointed, of=lambda m: (m(x) ** 2).mean()))


def test_the_backward_pass_records_only_the_call():
    """Under reverse mode, remat(f) is one node however many ops f runs."""
    recorded = {}
    real_init = ReverseTrace.__init__

    def spy(self):
        real_init(self)
        recorded.setdefault("traces", []).append(self)

    x = s4tf.Tensor([0.5, -1.0])
    ReverseTrace.__init__ = spy
    try:
        s4tf.gradient(x, of=lambda x: s4tf.remat(_block)(x).sum())
    finally:
        ReverseTrace.__init__ = real_init
    outer = recorded["traces"][0]
    assert len(outer.nodes) == 3  # the point, the remat call, the sum


def _gelu_composite(x):
    # GELU written out in ops: s4tf.gelu is one fused primitive that saves no
    # intermediates, and checkpointing pays off where a layer saves many.
    return x * (s4tf.tanh((x + x * x * x * 0.044715) * 0.7978845608028654) + 1.0) * 0.5


def test_checkpointing_keeps_less_memory():
    s4tf.random.seed(0)
    plain = layers.Sequential([layers.Dense(64, 64, activation=_gelu_composite) for _ in range(8)])
    checkpointed = layers.Sequential(plain.layers, checkpoint=True)
    x = s4tf.random.normal([128, 64])
    peaks, grads = [], []
    for model in (plain, checkpointed):
        tracemalloc.start()
        grads.append(s4tf.gradient(model, of=lambda m: (m(x) ** 2).mean()))
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    _tree_close(*grads)
    assert peaks[1] < 0.5 * peaks[0], peaks


def test_random_draws_are_replayed_and_the_stream_moves_once():
    model = layers.Sequential(layers.Dense(4, 8), layers.Dropout(0.5), layers.Dense(8, 2))
    checkpointed = layers.Sequential(model.layers, checkpoint=True)
    x = s4tf.random.normal([5, 4])
    results = []
    for m in (model, checkpointed):
        s4tf.random.seed(7)
        with s4tf.training():
            grads = s4tf.gradient(m, of=lambda m: (m(x) ** 2).sum())
        results.append((grads, s4tf.random.normal([3]).tolist()))
    _tree_close(results[0][0], results[1][0])
    assert results[0][1] == results[1][1]


def test_state_cells_change_once():
    def model(checkpoint):
        s4tf.random.seed(3)
        return layers.Sequential(layers.Dense(3, 4), layers.BatchNorm(4), checkpoint=checkpoint)

    x = s4tf.random.normal([6, 3])
    stats = []
    for checkpoint in (False, True):
        m = model(checkpoint)
        with s4tf.training():
            grads = s4tf.gradient(m, of=lambda m: (m(x) ** 2).sum())
        stats.append((grads, m.layers[1].running_mean.value.tolist(),
                      m.layers[1].running_variance.value.tolist()))
    _tree_close(stats[0][0], stats[1][0])
    assert stats[0][1:] == stats[1][1:]


@pytest.mark.parametrize("x_is_differentiated", [True, False])
def test_reading_a_differentiated_value_from_outside_is_refused(x_is_differentiated):
    def loss(w, x):
        inner = s4tf.remat(lambda x: (x * w).sum())  # w: a differentiated value, not an argument
        return inner(x)

    w, x = s4tf.Tensor([1.0, 2.0]), s4tf.Tensor([3.0, 4.0])
    with pytest.raises(TypeError, match="pass that value in"):
        if x_is_differentiated:
            s4tf.gradient(w, x, of=loss)
        else:
            s4tf.gradient(w, of=lambda w: loss(w, x))


def test_bad_arguments():
    with pytest.raises(TypeError, match="expected a function or a layer"):
        s4tf.remat(3)
    with pytest.raises(TypeError, match="checkpoint must be True or False"):
        layers.Sequential(layers.Dense(2, 2), checkpoint="yes")


@pytest.mark.usefixtures("backend")
def test_optimization_barrier_is_the_identity_in_its_first_argument():
    x, y = s4tf.Tensor([1.0, 2.0]), s4tf.Tensor([3.0])
    assert optimization_barrier(x, y).tolist() == [1.0, 2.0]
    gx, gy = s4tf.gradient(x, y, of=lambda x, y: (optimization_barrier(x, y) * x).sum())
    assert gx.tolist() == [2.0, 4.0] and gy.tolist() == [0.0]
    slope = s4tf.derivative(2.0, of=lambda t: optimization_barrier(s4tf.Tensor(t) * t).sum())
    assert float(slope) == pytest.approx(4.0)


def test_on_xla_the_compiled_step_recomputes():
    pytest.importorskip("jax")
    from s4tf.backends.xla.lowering import lowered

    plain = s4tf.to_backend(_mlp(depth=6, width=32), "xla")
    checkpointed = layers.Sequential(plain.layers, checkpoint=True)
    x = s4tf.to_backend(s4tf.random.normal([64, 32]), "xla")
    texts, temps, grads = [], [], []
    for model in (plain, checkpointed):
        step = lowered(lambda m: s4tf.gradient(m, of=lambda m: (m(x) ** 2).mean()), model)
        texts.append(step.as_text())
        temps.append(step.compile().memory_analysis().temp_size_in_bytes)
        grads.append(s4tf.gradient(model, of=lambda m: (m(x) ** 2).mean()))
    _tree_close(*grads)
    assert "optimization_barrier" not in texts[0] and "optimization_barrier" in texts[1]
    assert temps[1] < 0.6 * temps[0], temps


def test_captured_steps_replay_the_recomputations_draws():
    """A captured step redraws what it heard in order: the rerun's draws stay the forward's."""
    pytest.importorskip("jax")

    def gradients(checkpoint, captured):
        s4tf.random.seed(0)
        with s4tf.backend("xla"):
            model = layers.Sequential(layers.Dense(4, 8), layers.Dropout(0.5), layers.Dense(8, 1),
                                      checkpoint=checkpoint)
            x = s4tf.random.normal([6, 4])

        def step(model, x):
            with s4tf.training():
                return s4tf.gradient(model, of=lambda m: (m(x) ** 2).sum())

        run = s4tf.xla.compile(step) if captured else step
        s4tf.random.seed(1)
        results = [run(model, x).layers[0].weight.numpy().copy() for _ in range(5)]
        return results, getattr(run, "body_runs", None)

    expected, _ = gradients(checkpoint=False, captured=False)
    results, body_runs = gradients(checkpoint=True, captured=True)
    assert body_runs == 3  # recorded once, verified twice, then replayed
    for want, got in zip(expected, results, strict=True):
        np.testing.assert_array_equal(got, want)
