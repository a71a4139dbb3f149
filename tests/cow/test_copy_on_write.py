"""Aliasing suite: an old value is never seen changed; a sole owner is updated in place."""

import call_shapes
import numpy as np
import pytest
from aliasing_models import Inner, Net, assert_same, grad_of, make_net, snapshot, storage_ids
from hypothesis import given, settings
from hypothesis import strategies as st

import s4tf
from s4tf import optimizers


def test_sole_owner_is_updated_in_place_with_the_copy_paths_numbers():
    net, twin = make_net(), make_net()
    opt, opt2 = optimizers.Adam(net, learning_rate=0.1), optimizers.Adam(twin, learning_rate=0.1)
    for _ in range(3):
        g = grad_of(net)
        ids = storage_ids(net)
        net = opt.update(net, g)
        assert storage_ids(net) == ids
        twin = opt2.update(twin, grad_of(twin), consume=False)
    for a, b in zip(snapshot(net), snapshot(twin), strict=True):
        np.testing.assert_array_equal(a, b)


def test_rebinding_consumes_and_new_name_consumes_old():
    net = make_net()
    opt = optimizers.SGD(net)
    new = opt.update(net, grad_of(net))
    with pytest.raises(s4tf.ConsumedValueError, match="test_copy_on_write.py"):
        _ = net.first
    with pytest.raises(s4tf.ConsumedValueError):
        net(1)
    with pytest.raises(s4tf.ConsumedValueError):
        opt.update(net, grad_of(new))
    assert new.first.w.shape == (3, 2)


def test_alias_before_update_keeps_old_value():
    net = make_net()
    opt = optimizers.SGD(net, learning_rate=0.5)
    old = net
    snap = snapshot(old)
    net = opt.update(net, grad_of(net))
    assert_same(old, snap)
    assert not np.array_equal(snapshot(net)[0], snap[0])
    assert old.cell is not net.cell  # the old model still lives: the new one owns its cell


def test_layer_shared_by_two_models_copies_only_that_layer():
    net = make_net()
    other = Net(net.first, net.second, [], {}, 1.0)
    snap = snapshot(other)
    ids = storage_ids(net)
    opt = optimizers.SGD(net, learning_rate=0.5)
    net = opt.update(net, grad_of(net))
    assert_same(other, snap)
    new_ids = storage_ids(net)
    assert new_ids[:4] != ids[:4]  # the shared layers were copied
    assert new_ids[4:] == ids[4:]  # the rest written in place


@pytest.mark.parametrize("container", ["list", "dict"])
def test_model_inside_a_container(container):
    net = make_net()
    holder = [net] if container == "list" else {"m": net}
    snap = snapshot(net)
    opt = optimizers.SGD(net, learning_rate=0.5)
    net = opt.update(net, grad_of(net))
    kept = holder[0] if container == "list" else holder["m"]
    assert_same(kept, snap)


def test_tensor_kept_in_a_list_and_numpy_view():
    net = make_net()
    kept = [net.first.w]
    view = net.second.b.numpy()
    w_before, b_before = np.array(kept[0]), view.copy()
    opt = optimizers.SGD(net, learning_rate=0.5)
    net = opt.update(net, grad_of(net))
    np.testing.assert_array_equal(np.asarray(kept[0]), w_before)
    np.testing.assert_array_equal(view, b_before)
    assert not np.array_equal(np.asarray(net.first.w), w_before)


def test_kept_pullback_still_sees_old_values():
    net = make_net()
    loss = lambda m: (m.first.w * m.first.w).sum()  # noqa: E731
    value, pullback = s4tf.value_with_pullback(net, of=loss)
    before = pullback(s4tf.Tensor(1.0)).first.w.numpy().copy()
    opt = optimizers.SGD(net, learning_rate=0.5)
    net = opt.update(net, grad_of(net))
    np.testing.assert_array_equal(pullback(s4tf.Tensor(1.0)).first.w.numpy(), before)


def test_value_with_gradient_loop_updates_in_place():
    net = make_net()
    opt = optimizers.SGD(net, learning_rate=0.1)
    ids = storage_ids(net)
    for _ in range(2):
        _, grads = s4tf.value_with_gradient(net, of=lambda m: (m.first.w * m.first.w).sum())
        net = opt.update(net, grads)
    assert storage_ids(net) == ids


def test_model_captured_in_a_closure():
    net = make_net()
    keep = net
    get = lambda: keep  # noqa: E731
    snap = snapshot(net)
    opt = optimizers.SGD(net, learning_rate=0.5)
    net = opt.update(net, grad_of(net))
    assert_same(get(), snap)


def test_closure_over_the_rebound_name_sees_new_or_raises():
    net = make_net()
    get = lambda: net  # noqa: E731
    opt = optimizers.SGD(net, learning_rate=0.5)
    net = opt.update(net, grad_of(net))
    assert get() is net  # the closure reads the rebound cell


def test_module_level_notebook_bindings():
    namespace = {"opt": optimizers.SGD(make_net(), learning_rate=0.5), "make_net": make_net,
                 "grad_of": grad_of, "storage_ids": storage_ids, "snapshot": snapshot}
    exec(
        "model = make_net()\nids = storage_ids(model)\nmodel = opt.update(model, grad_of(model))\n"
        "same = storage_ids(model) == ids\nold = model\nsnap = snapshot(old)\n"
        "model = opt.update(model, grad_of(model))\n",
        namespace,
    )
    assert namespace["same"]
    assert_same(namespace["old"], namespace["snap"])


class Trainer:
    def __init__(self):
        self.model = make_net()
        self.opt = optimizers.SGD(self.model, learning_rate=0.5)

    def step(self):
        self.model = self.opt.update(self.model, grad_of(self.model))


def test_attribute_binding():
    trainer = Trainer()
    ids = storage_ids(trainer.model)
    trainer.step()
    assert storage_ids(trainer.model) == ids  # sole owner: in place
    seen = trainer.model
    snap = snapshot(seen)
    trainer.step()
    assert_same(seen, snap)


def test_helper_function_between_caller_and_update_copies():
    net = make_net()
    opt = optimizers.SGD(net, learning_rate=0.5)

    def step(m, g):
        return opt.update(m, g)

    snap = snapshot(net)
    new = step(net, grad_of(net))
    assert_same(net, snap)
    assert not np.array_equal(snapshot(new)[0], snap[0])


def test_always_copy_environment(monkeypatch):
    monkeypatch.setenv("S4TF_COPY_ON_WRITE", "always-copy")
    net = make_net()
    ids = storage_ids(net)
    net = optimizers.SGD(net).update(net, grad_of(net))
    assert not set(storage_ids(net)) & set(ids)
    monkeypatch.setenv("S4TF_COPY_ON_WRITE", "sometimes")
    with pytest.raises(ValueError, match="always-copy"):
        optimizers.SGD(net).update(net, grad_of(net))


def test_debug_reports_the_holder_of_a_large_model(monkeypatch, capsys):
    monkeypatch.setenv("S4TF_DEBUG", "1")
    model = [s4tf.zeros([300_000])]
    net = Inner(model[0], s4tf.zeros([2]))
    opt = optimizers.SGD(net)
    net = opt.update(net, Inner.TangentVector(w=s4tf.ones([300_000]), b=s4tf.ones([2])))
    err = capsys.readouterr().err
    assert "SGD.update" in err and "a list" in err


def test_shared_state_cell_is_copied_unique_cell_is_kept():
    net = make_net()
    cell = net.cell
    opt = optimizers.SGD(net)
    net = opt.update(net, grad_of(net))
    assert net.cell is not cell  # the test's `cell` still sees the old one
    del cell
    cell_id = id(net.cell)
    net = opt.update(net, grad_of(net))
    assert id(net.cell) == cell_id


ALIAS_KINDS = ["root", "first", "second", "w", "b", "extra", "table", "view", "list_item"]


def _take_alias(net, kind):
    return {
        "root": lambda: net, "first": lambda: net.first, "second": lambda: net.second,
        "w": lambda: net.first.w, "b": lambda: net.second.b, "extra": lambda: net.extra,
        "table": lambda: net.table, "view": lambda: net.first.b.numpy(),
        "list_item": lambda: [net.extra[0]],
    }[kind]()


def _observe(alias):
    if isinstance(alias, np.ndarray):
        return [alias.copy()]
    if isinstance(alias, list) and alias and isinstance(alias[0], s4tf.Tensor):
        return [np.array(alias[0])]
    return snapshot(alias)


@settings(max_examples=40, deadline=None)
@given(kinds=st.lists(st.sampled_from(ALIAS_KINDS), max_size=4),
       cls=st.sampled_from([optimizers.SGD, optimizers.Adam, optimizers.RMSProp]),
       steps=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_random_aliasing_never_changes_an_observed_value(kinds, cls, steps, seed):
    net = make_net(seed)
    opt = cls(net, learning_rate=0.5)
    twin = make_net(seed)
    opt_twin = cls(twin, learning_rate=0.5)
    aliases = [_take_alias(net, kind) for kind in kinds]
    observed = [_observe(a) for a in aliases]
    for _ in range(steps):
        net = opt.update(net, grad_of(net))
        twin = opt_twin.update(twin, grad_of(twin), consume=False)
    for alias, before in zip(aliases, observed, strict=True):
        for got, want in zip(_observe(alias), before, strict=True):
            np.testing.assert_array_equal(got, want)
    for a, b in zip(snapshot(net), snapshot(twin), strict=True):
        np.testing.assert_array_equal(a, b)


# Call shapes (HOW_IT_WORKS.md): a model held by a list, a dict or an attribute stays valid and
# unchanged unless the result is stored back into that very place; a plain name is consumed.


def _expected(entry, cls, make, g):
    if entry.startswith("update"):
        return cls(make(), learning_rate=0.5).update(make(), g, consume=False)
    return make().moved(along=g, consume=False)


@pytest.mark.parametrize("scope", ["function", "module"])
@pytest.mark.parametrize("entry", ["update", "update-keywords"])
@pytest.mark.parametrize("shape", sorted(call_shapes.SHAPES))
def test_each_call_shape_keeps_or_consumes_as_the_contract_says(shape, entry, scope):
    make = lambda: make_net(3)  # noqa: E731
    g = grad_of(make())
    opt = optimizers.SGD(make(), learning_rate=0.5)
    names = call_shapes.run(call_shapes.SHAPES[shape], entry, scope, False, make, opt, g)
    call_shapes.check(call_shapes.SHAPES[shape], False, names,
                      _expected(entry, optimizers.SGD, make, g))


def test_a_list_item_passed_to_update_stays_usable_in_the_list():
    models = [make_net()]
    snap = snapshot(models[0])
    opt = optimizers.SGD(models[0], learning_rate=0.5)
    m = opt.update(models[0], grad_of(models[0]))
    assert_same(models[0], snap)
    assert not np.array_equal(snapshot(m)[0], snap[0])
    table = {"m": make_net()}
    m = opt.update(table["m"], grad_of(table["m"]))
    assert_same(table["m"], snapshot(make_net()))


def test_attribute_updated_into_another_name_keeps_the_holders_model():
    trainer = Trainer()
    snap = snapshot(trainer.model)
    m = trainer.opt.update(trainer.model, grad_of(trainer.model))
    assert_same(trainer.model, snap)
    assert not s4tf.cow.consumed.is_consumed(m)


def test_an_item_updated_back_into_its_place_is_written_in_place():
    models = [make_net()]
    ids = storage_ids(models[0])
    opt = optimizers.SGD(models[0], learning_rate=0.5)
    models[0] = opt.update(models[0], grad_of(models[0]))
    i = 0
    models[i] = opt.update(models[i], grad_of(models[i]))
    assert storage_ids(models[0]) == ids


@settings(max_examples=60, deadline=None)
@given(shape=st.sampled_from(sorted(call_shapes.SHAPES)),
       entry=st.sampled_from(sorted(call_shapes.ENTRY_CALLS)),
       scope=st.sampled_from(["function", "module"]), alias=st.booleans(),
       cls=st.sampled_from([optimizers.SGD, optimizers.Adam]), seed=st.integers(0, 2**16))
def test_random_call_shapes_never_leave_a_reachable_consumed_or_changed_model(
        shape, entry, scope, alias, cls, seed):
    make = lambda: make_net(seed)  # noqa: E731
    g = grad_of(make())
    opt = cls(make(), learning_rate=0.5)
    names = call_shapes.run(call_shapes.SHAPES[shape], entry, scope, alias, make, opt, g)
    call_shapes.check(call_shapes.SHAPES[shape], alias, names, _expected(entry, cls, make, g))


def test_debug_names_the_call_site_that_forced_a_copy(monkeypatch, capsys):
    monkeypatch.setenv("S4TF_DEBUG", "1")
    models = [Inner(s4tf.zeros([300_000]), s4tf.zeros([2]))]
    opt = optimizers.SGD(models[0])
    m = opt.update(models[0], Inner.TangentVector(w=s4tf.ones([300_000]), b=s4tf.ones([2])))
    err = capsys.readouterr().err
    assert "SGD.update" in err and "passed as models[0]" in err
    assert m.w.shape == (300_000,)


# Issue 20, item 6: the result stored into another attribute of the same holder than the
# one read. The holder still shows its old model under the attribute read, so it must copy.
@pytest.mark.parametrize("scope", ["function", "module"])
def test_a_result_stored_into_another_attribute_of_the_holder_copies(scope):
    h = Holder()
    h.a = make_net()
    snap = snapshot(h.a)
    opt = optimizers.SGD(h.a, learning_rate=0.5)
    names = {"h": h, "opt": opt, "g": grad_of(h.a)}
    statement = "h.b = opt.update(h.a, g)"
    if scope == "function":
        exec(f"def step(h, opt, g):\n    {statement}\nstep(h, opt, g)", names)
    else:
        exec(statement, names)
    assert_same(h.a, snap)  # valid (not consumed) and unchanged
    assert not np.array_equal(snapshot(h.b)[0], snap[0])


class Holder:
    """An object whose attributes hold models."""
