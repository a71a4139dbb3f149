"""s4tf values through JAX (s4tf/interop/jax_bridge.py, s4tf/differentiable/jax_pytrees.py,
the jax backend): jit, grad, vmap and scan over models, Tensor(jax array), as_jax_function."""

from __future__ import annotations

import numpy as np
import pytest

import s4tf
from s4tf import layers

jax = pytest.importorskip("jax")
jnp = jax.numpy


@pytest.fixture
def dense():
    s4tf.random.seed(1)
    return layers.Dense(3, 2, activation=s4tf.tanh)


def _close(a, b, tol=1e-5):
    a = a.numpy() if isinstance(a, s4tf.Tensor) else np.asarray(a)
    b = b.numpy() if isinstance(b, s4tf.Tensor) else np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_tensors_flatten_to_jax_arrays_and_static_fields_stay_structure(dense):
    leaves, treedef = jax.tree_util.tree_flatten(dense)
    assert [type(leaf) for leaf in leaves] == [type(jnp.zeros(1))] * 2
    assert [leaf.shape for leaf in leaves] == [(3, 2), (2,)]
    rebuilt = jax.tree_util.tree_unflatten(treedef, leaves)
    assert type(rebuilt) is layers.Dense and rebuilt.activation is s4tf.tanh
    _close(rebuilt.weight, dense.weight)


def test_jit_of_a_layer_call_equals_s4tf(dense):
    x = s4tf.random.normal([4, 3], seed=2)
    seen = []

    def call(model, x):
        seen.append(model.weight.backend)
        return model(x)

    y = jax.jit(call)(dense, x)
    assert seen == ["jax"]  # inside the trace: tensors of the jax backend around tracers
    assert isinstance(y, s4tf.Tensor) and y.backend == "naive"
    _close(y, dense(x))


def test_grad_over_a_model_equals_s4tf_gradient_and_updates_with_an_optimizer(dense):
    x = s4tf.random.normal([4, 3], seed=2)
    labels = s4tf.Tensor([0, 1, 1, 0])

    def loss(model):
        return s4tf.softmax_cross_entropy(logits=model(x), labels=labels)

    grads = jax.grad(lambda m: s4tf.to_jax(loss(m)))(dense)
    expected = s4tf.gradient(dense, of=loss)
    _close(grads.weight, expected.weight)
    _close(grads.bias, expected.bias)
    new = s4tf.optimizers.SGD(dense, learning_rate=0.5).update(dense, grads, consume=False)
    _close(new.weight, dense.weight - 0.5 * expected.weight)


def test_grad_through_batch_norm_in_training_equals_s4tf():
    s4tf.random.seed(3)
    model = layers.Sequential(layers.Dense(3, 4), layers.BatchNorm(4))
    x = s4tf.random.normal([6, 3], seed=4)
    with s4tf.training():
        grads = jax.jit(jax.grad(lambda m: s4tf.to_jax((m(x) ** 2).mean())))(model)
        expected = s4tf.gradient(model, of=lambda m: (m(x) ** 2).mean())
    for got, want in zip(s4tf.tree_leaves(grads, differentiable=True),
                         s4tf.tree_leaves(expected), strict=True):
        _close(got, want, 1e-4)


def test_vmap_and_scan_take_models_and_tensors(dense):
    xs = s4tf.random.normal([5, 4, 3], seed=5)
    batched = jax.vmap(lambda x: dense(x))(xs)
    _close(batched, np.stack([dense(xs[i]).numpy() for i in range(5)]))

    def body(model, x):
        return model, model(x).sum()

    carry, sums = jax.lax.scan(body, dense, xs)
    assert type(carry) is layers.Dense
    _close(sums, [dense(xs[i]).sum().item() for i in range(5)])


def test_tensor_of_a_jax_array_and_of_a_tracer():
    array = jnp.arange(3.0)
    t = s4tf.Tensor(array)
    assert t.backend == "naive" and t.tolist() == [0.0, 1.0, 2.0]
    assert s4tf.Tensor(array, dtype=s4tf.int32).dtype == s4tf.int32

    def inside(a):
        t = s4tf.Tensor(a)
        assert t.backend == "jax"
        return (s4tf.exp(t) * 2).sum()

    _close(jax.jit(inside)(array), (np.exp(np.arange(3.0)) * 2).sum())
    _close(jax.grad(lambda a: s4tf.to_jax(inside(a)))(array), 2 * np.exp(np.arange(3.0)))


def test_reading_a_traced_tensor_says_why_and_what_to_do(dense):
    def bad(model):
        return float(model.weight.sum())

    with pytest.raises(TypeError, match="JAX tracer.*jax.lax.cond"):
        jax.jit(bad)(dense)


def test_as_jax_function_runs_s4tf_on_flat_arrays(dense):
    from s4tf.interop import as_jax_function

    x = s4tf.random.normal([4, 3], seed=6)
    jfn, in_tree, out_tree = as_jax_function(lambda m, x, scale: (m(x) * scale, m), dense, x, 2.0)
    assert in_tree.num_leaves == 3 and in_tree.shapes == ((3, 2), (2,), (4, 3))
    assert out_tree.num_leaves == 3 and out_tree.shapes[0] == (4, 2)
    outputs = jax.jit(jfn)(*in_tree.flatten((dense, x, 2.0)))
    assert isinstance(outputs, tuple) and all(isinstance(o, jax.Array) for o in outputs)
    y, model = out_tree.unflatten(outputs)
    _close(y, dense(x) * 2.0)
    assert type(model) is layers.Dense and model.activation is s4tf.tanh
    # The function is plain JAX: no s4tf value is needed to call it.
    plain = jfn(*(np.asarray(a) for a in in_tree.flatten((dense, x, 2.0))))
    _close(plain[0], y)
    with pytest.raises(TypeError, match="takes 3 arrays"):
        out_tree.unflatten(outputs[:1] + outputs)


def test_to_jax_on_xla_is_the_buffer_and_is_never_donated_under_the_holder():
    with s4tf.backend("xla"):
        s4tf.random.seed(7)
        model = layers.Dense(4, 4)
        model = s4tf.to_backend(model, "xla")
        pending = model.weight * 2  # a lazy value: to_jax computes it first
    weight = s4tf.to_jax(model.weight)
    assert weight is model.weight._data.buffer  # the same buffer, no copy
    doubled = s4tf.to_jax(pending)
    expected = np.array(doubled)
    # A step that would donate the old weight's buffer if nobody held it.
    opt = s4tf.optimizers.SGD(model, learning_rate=0.1)
    grads = s4tf.gradient(model, of=lambda m: m(s4tf.ones([2, 4]).to("xla")).sum())
    model = opt.update(model, grads)
    s4tf.barrier()
    assert not weight.is_deleted() and not doubled.is_deleted()
    np.testing.assert_array_equal(np.array(doubled), expected)
    back = s4tf.from_jax(s4tf.to_jax(model), like=model)
    assert back.weight.backend == "xla" and back.weight._data.buffer is model.weight._data.buffer
    # An array handed in with from_jax is still the caller's: never donated either.
    mine = jnp.ones((4, 4), dtype=jnp.float32)
    held = s4tf.replace(model, weight=s4tf.from_jax(mine, like=model.weight))
    assert held.weight._data.buffer is mine
    held = opt.update(held, grads)
    s4tf.barrier()
    assert not mine.is_deleted() and float(mine.sum()) == 16.0


def test_without_jax_the_error_names_the_extra(monkeypatch):
    import importlib

    real = importlib.import_module

    def no_jax(name, *args):
        if name == "jax":
            raise ModuleNotFoundError("No module named 'jax'", name="jax")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", no_jax)
    with pytest.raises(ImportError, match=r"pip install 's4tf\[xla\]'"):
        s4tf.to_jax(s4tf.ones([2]))


def test_the_jax_backend_runs_s4tf_differentiation_eagerly(dense):
    x = s4tf.random.normal([4, 3], seed=8)
    on_jax = s4tf.to_backend(dense, "jax")
    assert on_jax.weight.backend == "jax" and isinstance(on_jax.weight._data, jax.Array)
    grads = s4tf.gradient(on_jax, of=lambda m: (m(x.to("jax")) ** 2).sum())
    expected = s4tf.gradient(dense, of=lambda m: (m(x) ** 2).sum())
    assert grads.weight.backend == "jax"
    _close(grads.weight, expected.weight)


def test_a_whole_s4tf_training_step_as_a_jax_function(dense):
    from s4tf.interop import as_jax_function

    x = s4tf.random.normal([4, 3], seed=9)
    labels = s4tf.Tensor([0, 1, 1, 0])
    opt = s4tf.optimizers.SGD(dense, learning_rate=0.1)

    def step(model, x, labels):
        loss, grads = s4tf.value_with_gradient(
            model, of=lambda m: s4tf.softmax_cross_entropy(logits=m(x), labels=labels))
        return opt.update(model, grads), loss

    jfn, in_tree, out_tree = as_jax_function(step, dense, x, labels)
    new, loss = out_tree.unflatten(jax.jit(jfn)(*in_tree.flatten((dense, x, labels))))
    expected_model, expected_loss = step(dense, x, labels)
    _close(loss, expected_loss)
    _close(new.weight, expected_model.weight)
    _close(new.bias, expected_model.bias)


def test_per_example_gradients_with_vmap_of_grad(dense):
    xs = s4tf.random.normal([5, 3], seed=10)
    labels = s4tf.Tensor([0, 1, 1, 0, 1])

    def loss(model, x, label):
        logits = model(x.expand_dims(0))
        return s4tf.to_jax(s4tf.softmax_cross_entropy(logits=logits, labels=label.expand_dims(0)))

    grads = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))(dense, xs, labels)
    assert grads.weight.shape == (5, 3, 2)
    for i in (0, 3):
        expected = s4tf.gradient(dense, of=lambda m, i=i: s4tf.softmax_cross_entropy(
            logits=m(xs[i:i + 1]), labels=labels[i:i + 1]))
        _close(grads.weight[i], expected.weight)


def test_a_traced_tensor_prints_its_shape_and_dtype(dense):
    shown = []
    jax.jit(lambda m: shown.append(repr(m.weight)) or 0)(dense)
    assert shown == ["Tensor(<traced float32[3,2]>, backend=jax)"]


def test_s4tf_ops_keep_a_symbolic_batch_axis_for_jax_export():
    from jax import export

    from s4tf.interop import as_jax_function

    s4tf.random.seed(11)
    lenet = s4tf.models.LeNet()  # Flatten reshapes to (batch, 400): a symbolic product
    x = s4tf.random.normal([2, 28, 28, 1], seed=12)
    jfn, in_tree, _ = as_jax_function(lambda m, x: m(x), lenet, x)
    (batch,) = export.symbolic_shape("b")
    specs = [jax.ShapeDtypeStruct(s, d) for s, d in zip(in_tree.shapes, in_tree.dtypes, strict=True)]
    specs[-1] = jax.ShapeDtypeStruct((batch, 28, 28, 1), specs[-1].dtype)
    exported = export.export(jax.jit(jfn))(*specs)
    five = s4tf.random.normal([5, 28, 28, 1], seed=13)
    (y,) = exported.call(*in_tree.flatten((lenet, five)))
    _close(y, lenet(five))


def test_from_jax_checks_shapes_and_takes_like_dtypes(dense):
    arrays = s4tf.to_jax(dense)
    wide = s4tf.from_jax(jax.tree_util.tree_map(lambda a: a.astype(jnp.float64), arrays),
                         like=dense)
    assert wide.weight.dtype == s4tf.float32
    with pytest.raises(ValueError, match=r"shape \(2, 3\).*\(3, 2\)"):
        s4tf.from_jax(jax.tree_util.tree_map(lambda a: a.T, arrays), like=dense)
    with pytest.raises(ValueError, match="has 1 leaves but like= has 2"):
        s4tf.from_jax([jnp.zeros(2)], like=dense)
