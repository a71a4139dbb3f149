"""s4tf.vmap: arguments and results, composition with the differential operators, errors.

Values are checked against a Python loop over examples of the unbatched
function, on every backend (tests/conftest.py).
"""

import numpy as np
import pytest

import s4tf
from s4tf.testing import assert_allclose

pytestmark = pytest.mark.usefixtures("backend")

_rng = np.random.default_rng(7)


def T(*shape):
    return s4tf.Tensor(_rng.uniform(-1.0, 1.0, shape), dtype=s4tf.float64)


def stacked(values, axis=0):
    return s4tf.stack(list(values), axis=axis)


def loop(f, *args, in_axes):
    """``f`` applied to each example in Python: what vmap must equal."""
    size = next(a.shape[ax] for a, ax in zip(args, in_axes, strict=True) if ax is not None)

    def example(a, ax, i):
        return a if ax is None else s4tf.ops.getitem(a, (slice(None),) * ax + (i,))

    return [f(*(example(a, ax, i) for a, ax in zip(args, in_axes, strict=True)))
            for i in range(size)]


def test_mapped_axis_and_unmapped_arguments():
    x, w = T(3, 5, 4), T(4, 2)

    def f(w, x):
        return s4tf.tanh(x @ w).sum(axis=0)

    got = s4tf.vmap(f, in_axes=(None, 1))(w, x)
    assert_allclose(got, stacked(loop(f, w, x, in_axes=(None, 1))), atol=1e-12)


def test_out_axes_moves_the_batch():
    x = T(5, 3)
    got = s4tf.vmap(lambda r: s4tf.stack([r, r * 2.0]), out_axes=2)(x)
    assert got.shape == (2, 3, 5)
    assert_allclose(got[1, :, 4], x[4] * 2.0, atol=1e-12)


def test_per_example_gradients_equal_a_loop_of_gradient():
    w, b, x, y = T(3, 2), T(2), T(6, 3), T(6, 2)

    def loss(params, x, y):
        w, b = params
        return ((s4tf.sigmoid(x @ w + b) - y) ** 2).sum()

    got = s4tf.vmap(s4tf.gradient(of=loss), in_axes=(None, 0, 0))((w, b), x, y)
    expected = loop(s4tf.gradient(of=loss), (w, b), x, y, in_axes=(None, 0, 0))
    assert_allclose(got[0][0], stacked(e[0][0] for e in expected), atol=1e-12)
    assert_allclose(got[0][1], stacked(e[0][1] for e in expected), atol=1e-12)
    assert_allclose(got[1], stacked(e[1] for e in expected), atol=1e-12)
    assert_allclose(got[2], stacked(e[2] for e in expected), atol=1e-12)


def test_gradient_of_a_vmapped_function():
    x, w = T(4, 3), T(3)

    def f(w, x):
        return s4tf.vmap(lambda row: s4tf.sin(row * w).sum())(x).sum()

    got = s4tf.gradient(w, x, of=f)
    expected = s4tf.gradient(w, x, of=lambda w, x: s4tf.sin(x * w).sum())
    assert_allclose(got, expected, atol=1e-12)


def test_a_primitive_without_a_rule_names_itself():
    bare = s4tf.ops.primitive("neg")
    with pytest.raises(NotImplementedError, match="'neg' has no batching rule"):
        s4tf.vmap(lambda r: bare(r))(T(2, 3))


# Composition with the differential operators, in both orders, and nesting.
def _f(x):
    return s4tf.sin(x) * x.sum() + s4tf.exp(x * 0.5)


def test_vmap_of_pullback_and_of_differential():
    x, ct, t = T(5, 3), T(5, 3), T(5, 3)
    got = s4tf.vmap(lambda x, c: s4tf.pullback(x, of=_f)(c))(x, ct)
    assert_allclose(got, stacked(s4tf.pullback(x[i], of=_f)(ct[i]) for i in range(5)), atol=1e-12)
    got = s4tf.vmap(lambda x, v: s4tf.differential(x, of=_f)(v))(x, t)
    assert_allclose(got, stacked(s4tf.differential(x[i], of=_f)(t[i]) for i in range(5)),
                    atol=1e-12)


def test_differential_and_pullback_of_a_vmapped_function():
    x, t = T(4, 3), T(4, 3)
    batched = s4tf.vmap(_f)
    assert_allclose(s4tf.differential(x, of=batched)(t),
                    stacked(s4tf.differential(x[i], of=_f)(t[i]) for i in range(4)), atol=1e-12)
    assert_allclose(s4tf.pullback(x, of=batched)(t),
                    stacked(s4tf.pullback(x[i], of=_f)(t[i]) for i in range(4)), atol=1e-12)


def test_vmap_of_nested_derivatives():
    x = T(6)

    def f(a):
        return s4tf.sin(a) * a * a

    second = s4tf.derivative(of=s4tf.derivative(of=f))
    got = s4tf.vmap(second)(x)
    assert_allclose(got, stacked(second(x[i]) for i in range(6)), atol=1e-12)
    mixed = s4tf.gradient(of=s4tf.derivative(of=f))  # reverse over forward
    assert_allclose(s4tf.vmap(mixed)(x), got, atol=1e-12)


def test_hessian_vector_products_per_example():
    x, v = T(4, 3), T(4, 3)

    def loss(a):
        return (s4tf.tanh(a) ** 2).sum() * a.sum()

    def hvp(a, u):
        return s4tf.differential(a, of=s4tf.gradient(of=loss))(u)

    assert_allclose(s4tf.vmap(hvp)(x, v), stacked(hvp(x[i], v[i]) for i in range(4)), atol=1e-12)


def test_gradient_of_a_function_of_per_example_gradients():
    # Differentiating through vmap(gradient): the penalty of gradient-norm regularisers.
    w, x = T(3), T(5, 3)

    def penalty(w, x):
        grads = s4tf.vmap(s4tf.gradient(of=lambda w, r: s4tf.sin(r @ w)), in_axes=(None, 0))(w, x)
        return (grads[0] ** 2).sum()

    def looped(w, x):
        total = 0.0
        for i in range(5):
            g = s4tf.gradient(w, of=lambda w, i=i: s4tf.sin(x[i] @ w))
            total = total + (g ** 2).sum()
        return total

    assert_allclose(s4tf.gradient(w, of=lambda w: penalty(w, x)),
                    s4tf.gradient(w, of=lambda w: looped(w, x)), atol=1e-12)


def test_vmap_of_vmap_maps_two_axes():
    x, y = T(3, 4, 2), T(2, 4)

    def f(a, b):
        return (a * b).sum() + s4tf.exp(a)

    inner = s4tf.vmap(f, in_axes=(0, 1))        # over the 4
    got = s4tf.vmap(inner, in_axes=(0, None))(x, y)  # over the 3
    expected = stacked(stacked(f(x[i, j], y[:, j]) for j in range(4)) for i in range(3))
    assert_allclose(got, expected, atol=1e-12)
    assert_allclose(s4tf.gradient(x, of=lambda x: s4tf.vmap(inner, in_axes=(0, None))(x, y).sum()),
                    s4tf.gradient(x, of=lambda x: stacked(stacked(f(x[i, j], y[:, j]).sum()
                                                                  for j in range(4))
                                                          for i in range(3)).sum()),
                    atol=1e-12)


def test_per_example_gradients_of_a_model_with_int_labels():
    s4tf.random.seed(0)
    model = s4tf.layers.Sequential(s4tf.layers.Dense(4, 5, activation=s4tf.relu),
                                   s4tf.layers.Dense(5, 3))
    model = s4tf.tree_map(lambda t: t.astype(s4tf.float64), model)
    x, y = T(6, 4), s4tf.Tensor([0, 2, 1, 1, 0, 2])

    def per_example(model, x, y):
        return s4tf.gradient(model, of=lambda m: s4tf.softmax_cross_entropy(
            logits=m(x), labels=y))

    got = s4tf.vmap(per_example, in_axes=(None, 0, 0))(model, x, y)
    expected = [per_example(model, x[i], y[i]) for i in range(6)]
    assert type(got) is type(expected[0])
    assert_allclose(got, s4tf.tree_map(lambda *leaves: stacked(leaves), *expected), atol=1e-12)
    assert got.layers[0].weight.shape == (6, 4, 5)


# Arguments, results and what is refused.
def test_a_model_maps_over_examples_and_is_not_held():
    import sys

    s4tf.random.seed(2)
    model = s4tf.layers.Dense(3, 2, activation=s4tf.tanh)
    before = sys.getrefcount(model.weight)
    batched = s4tf.vmap(model)
    after = sys.getrefcount(model.weight)
    assert after == before  # the function holds the model, not its tensors
    x = s4tf.random.normal([4, 3])
    assert_allclose(batched(x), model(x), atol=1e-6)


def test_in_axes_structures_over_dicts_and_model_fields():
    s4tf.random.seed(1)
    layer = s4tf.tree_map(lambda t: t.astype(s4tf.float64), s4tf.layers.Dense(3, 2))
    weights = T(4, 3, 2)   # a batch of weights, one bias for all
    batched = s4tf.replace(layer, weight=weights)
    x = T(3)
    got = s4tf.vmap(lambda m, x: m(x), in_axes=({"weight": 0}, None))(batched, x)
    expected = stacked(s4tf.replace(layer, weight=weights[i])(x) for i in range(4))
    assert_allclose(got, expected, atol=1e-12)
    d = {"a": T(4, 2), "b": T(2)}
    got = s4tf.vmap(lambda d: d["a"] * d["b"], in_axes=({"a": 0, "b": None},))(d)
    assert_allclose(got, d["a"] * d["b"], atol=1e-12)


def test_unbatched_results_are_repeated_and_out_axes_none_keeps_them():
    x = T(4, 2)
    ones, total = s4tf.vmap(lambda r: (s4tf.ones([3]), 2.0))(x)
    assert ones.shape == (4, 3) and total.shape == (4,)
    kept = s4tf.vmap(lambda r: (r * 2.0, s4tf.ones([3])), out_axes=(0, None))(x)
    assert kept[1].shape == (3,)


def test_without_derivative_keeps_the_batch():
    x = T(4, 3)
    got = s4tf.vmap(lambda r: r * s4tf.without_derivative(r))(x)
    assert_allclose(got, x * x, atol=1e-12)
    grad = s4tf.gradient(x, of=lambda x: s4tf.vmap(lambda r: r * s4tf.without_derivative(r))(x).sum())
    assert_allclose(grad, x, atol=1e-12)


def test_random_draws_are_independent_per_example_and_reproducible():
    x = s4tf.zeros([4, 3])
    s4tf.random.seed(3)
    noisy = s4tf.vmap(lambda r: r + s4tf.random.normal(r.shape))(x)
    rows = noisy.numpy()
    assert noisy.shape == (4, 3) and len({tuple(r) for r in rows.round(6)}) == 4
    s4tf.random.seed(3)
    again = s4tf.vmap(lambda r: r + s4tf.random.normal(r.shape))(x)
    assert_allclose(again, noisy)
    seeded = s4tf.vmap(lambda r: s4tf.random.uniform(r.shape, seed=5))(x)
    assert_allclose(seeded, s4tf.random.uniform([4, 3], seed=5))


def test_nested_vmaps_draw_for_every_pair_of_examples():
    s4tf.random.seed(5)
    draws = s4tf.vmap(s4tf.vmap(lambda s: s + s4tf.random.uniform([2])))(s4tf.zeros([3, 4]))
    values = draws.numpy().reshape(-1)
    assert draws.shape == (3, 4, 2) and len(set(values.round(7))) == values.size


def test_dropout_masks_differ_per_example():
    s4tf.random.seed(4)
    drop = s4tf.layers.Dropout(0.5)
    with s4tf.learning_phase("training"):
        masks = s4tf.vmap(lambda r: drop(r))(s4tf.ones([8, 16])).numpy()
    assert set(np.unique(masks)) <= {0.0, 2.0}
    assert len({tuple(r) for r in masks}) == 8


def test_python_control_flow_on_a_batched_value_is_refused():
    with pytest.raises(TypeError, match="s4tf.where"):
        s4tf.vmap(lambda r: r if r.sum() > 0 else -r)(T(3, 2))


@pytest.mark.parametrize("read", [float, lambda t: t.numpy(), lambda t: t.item()])
def test_reading_a_number_of_a_batched_value_names_the_line(read):
    with pytest.raises(TypeError, match="test_vmap.py.*one value per example"):
        s4tf.vmap(lambda r: read(r.sum()))(T(3, 2))


@pytest.mark.parametrize("call, message", [
    (lambda: s4tf.vmap(lambda a, b: a + b)(T(3, 2), T(4, 2)), "different sizes"),
    (lambda: s4tf.vmap(lambda a, b: a * b, in_axes=(0, 0))(T(3), 2.0), "Python float"),
    (lambda: s4tf.vmap(lambda a: a, in_axes=None)(T(3)), "no argument is mapped"),
    (lambda: s4tf.vmap(lambda a: a, in_axes=(0, 0))(T(3)), "1 arguments"),
    (lambda: s4tf.vmap(lambda a: a, in_axes=2)(T(3, 2)), "axis 2"),
    (lambda: s4tf.vmap(lambda a: a * 2.0, out_axes=None)(T(3)), "differs between examples"),
    (lambda: s4tf.vmap(lambda d: d["a"], in_axes=([0],))({"a": T(3)}), "does not match"),
])
def test_mistakes_raise_saying_what_to_do(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call()


@pytest.mark.parametrize("backend", ["xla"], indirect=True)
def test_xla_records_one_graph_whatever_the_batch_size(backend):
    pytest.importorskip("jax")
    w = T(3, 2)

    def per_example(w, x):
        return s4tf.gradient(w, of=lambda w: s4tf.tanh(x @ w).sum())

    counts = []
    for size in (2, 16):
        x = T(size, 3)
        s4tf.barrier()
        before = s4tf.xla.metrics()["traced_ops"]
        s4tf.vmap(per_example, in_axes=(None, 0))(w, x)
        counts.append(s4tf.xla.metrics()["traced_ops"] - before)
        s4tf.barrier()
    assert counts[0] == counts[1] > 0
