"""The reverse-mode engine (s4tf/autodiff/reverse.py and the reverse operators):
the trace's node list as the backward order, first-cotangent stores, zeros for
unreached points, and reusable pullbacks."""

import os
import sys

import numpy as np

import s4tf
from s4tf.autodiff.reverse import ReverseTrace, backward


def _tensor(shape, seed, dtype=np.float32):
    return s4tf.Tensor(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


def test_points_the_result_ignores_get_zeros_of_their_own_kind():
    x, unused = _tensor((3,), 0), _tensor((2, 2), 1, np.float64)
    gx, gu, gf = s4tf.gradient(x, unused, 4.0, of=lambda a, b, c: (a * a).sum())
    np.testing.assert_allclose(gx.numpy(), 2 * x.numpy(), rtol=1e-6)
    assert gu.shape == (2, 2) and gu.dtype == s4tf.float64 and not gu.numpy().any()
    assert gf == 0.0 and type(gf) is float


def test_side_computations_and_escaped_tracers_leave_the_pullback_alone():
    x = _tensor((4,), 2)
    escaped = []

    def f(a):
        escaped.append(a)
        _ = (a * 3.0).sum()  # recorded but never reaches the result
        return (a * a).sum()

    value, pullback = s4tf.value_with_pullback(x, of=f)
    _ = escaped[0] * 5.0  # recorded on the finished trace after it returned
    first = pullback(s4tf.Tensor(1.0))
    second = pullback(s4tf.Tensor(2.0))
    np.testing.assert_allclose(first.numpy(), 2 * x.numpy(), rtol=1e-6)
    np.testing.assert_allclose(second.numpy(), 4 * x.numpy(), rtol=1e-6)  # first unchanged
    np.testing.assert_allclose(float(value), float((x * x).sum()), rtol=1e-6)


def test_cotangents_that_need_summing_casting_or_adding_take_the_general_path():
    w, b = _tensor((3, 2), 3), _tensor((2,), 4)
    x = _tensor((5, 3), 5)
    gw, gb = s4tf.gradient(w, b, of=lambda w, b: (x @ w + b).sum())
    np.testing.assert_allclose(gb.numpy(), [5.0, 5.0])  # summed over the broadcast rows
    np.testing.assert_allclose(gw.numpy(), np.repeat(x.numpy().sum(0)[:, None], 2, 1), rtol=1e-5)
    half = s4tf.Tensor([1.0, 2.0], dtype=s4tf.float16)
    g = s4tf.gradient(half, of=lambda h: (h * s4tf.Tensor([3.0, 4.0])).sum())
    assert g.dtype == s4tf.float16 and g.tolist() == [3.0, 4.0]  # cast back to the point's dtype
    twice = s4tf.gradient(x, of=lambda a: (a + a * a).sum())  # one parent, two edges
    np.testing.assert_allclose(twice.numpy(), 1 + 2 * x.numpy(), rtol=1e-6)


def test_custom_derivative_nodes_join_the_trace_in_order():
    @s4tf.differentiable
    def cube(x):
        return x * x * x

    @cube.vjp
    def _(x):
        return cube(x), lambda v: v * 3 * x * x

    x = _tensor((3,), 6)
    g = s4tf.gradient(x, of=lambda a: (cube(a * 2.0) + a).sum())
    np.testing.assert_allclose(g.numpy(), 24 * x.numpy() ** 2 + 1, rtol=1e-5)


def test_backward_finds_the_same_order_with_or_without_the_node_list():
    trace = ReverseTrace()
    a, b = trace.new_leaf(_tensor((2,), 7)), trace.new_leaf(_tensor((2,), 8))
    _ = a * 10.0  # unreachable from the root
    out = ((a * b) + a).sum()
    seed = s4tf.Tensor(1.0)
    walked = backward([out._node], [seed])
    listed = backward([out._node], [seed], trace.nodes)
    assert set(walked) == set(listed) == {id(a._node), id(b._node)}
    for key in walked:
        np.testing.assert_allclose(walked[key].numpy(), listed[key].numpy())
    assert [n.seq for n in trace.nodes] == sorted(n.seq for n in trace.nodes)


def test_a_custom_pullback_runs_once_per_backward_pass_for_all_its_arguments():
    import s4tf

    calls = []

    @s4tf.differentiable
    def product(x, y):
        return x * y

    @product.vjp
    def _(x, y):
        def pullback(v):
            calls.append(1)
            return v * y, v * x
        return x * y, pullback

    x, y = s4tf.Tensor([2.0, 3.0]), s4tf.Tensor([5.0, 7.0])
    _, pb = s4tf.value_with_pullback(x, y, of=product)
    for _ in range(2):
        dx, dy = pb(s4tf.ones([2]))
        assert dx.tolist() == [5.0, 7.0] and dy.tolist() == [2.0, 3.0]
    assert len(calls) == 2
    # Only one argument differentiated: still one call, and its cotangent only.
    calls.clear()
    assert s4tf.gradient(y, of=lambda b: product(x, b).sum()).tolist() == [2.0, 3.0]
    assert len(calls) == 1


def _python_calls(fn):
    """How many of s4tf's Python functions ``fn()`` runs: a deterministic measure of per-op cost.

    Only frames of the package count, so a NumPy release that moves its own
    Python wrappers does not change the number.
    """
    package = os.path.dirname(s4tf.__file__) + os.sep
    count = [0]

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(package):
            count[0] += 1

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return count[0]


def test_a_small_mlps_gradient_step_stays_within_its_python_call_budget():
    # The per-op cost of tracing and of the backward pass at batch 1 (benchmarks/mlp_ad.py):
    # s4tf's Python calls per step: 338 before issue 24's work, 297 after its first
    # round, 278 after its second.
    s4tf.random.seed(0)
    model = s4tf.layers.Sequential(
        s4tf.layers.Dense(8, 8, activation=s4tf.relu),
        s4tf.layers.Dense(8, 8, activation=s4tf.tanh),
        s4tf.layers.Dense(8, 8),
    )
    x, y = _tensor((1, 8), 2), _tensor((1, 8), 3)

    def loss(m):
        d = m(x) - y
        return (d * d).mean()

    def step():
        return s4tf.value_with_gradient(model, of=loss)

    step()
    calls = _python_calls(step)
    assert calls <= 280, f"{calls} Python calls per step, was 278: which op costs more now?"
