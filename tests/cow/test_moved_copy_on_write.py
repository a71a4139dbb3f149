"""Aliasing suite for ``moved(along=)``: the same rule as ``opt.update`` (HOW_IT_WORKS.md).

Every call is written inline, in the call shape a user writes: a helper that
made the call for the test would itself be a second holder of the model.
"""

import call_shapes
import numpy as np
import pytest
from aliasing_models import Inner, Net, assert_same, grad_of, make_net, snapshot, storage_ids
from hypothesis import given, settings
from hypothesis import strategies as st

import s4tf

ENTRIES = ["method", "function"]


def expected_after_one_move(net):
    return [x + 1 for x in snapshot(net)]


def assert_values(net, want):
    for got, expected in zip(snapshot(net), want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-6)


@pytest.mark.parametrize("entry", ENTRIES)
def test_sole_owner_moves_in_place_and_matches_the_copy(entry):
    net = make_net()
    want = expected_after_one_move(net)
    ids = storage_ids(net)
    if entry == "method":
        net = net.moved(along=grad_of(net))
    else:
        net = s4tf.moved(net, along=grad_of(net))
    assert storage_ids(net) == ids
    assert_values(net, want)
    copied = make_net().moved(along=grad_of(make_net()), consume=False)
    for a, b in zip(snapshot(net), snapshot(copied), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("entry", ENTRIES)
def test_new_name_consumes_the_old_one(entry):
    net = make_net()
    if entry == "method":
        new = net.moved(along=grad_of(net))
    else:
        new = s4tf.moved(net, along=grad_of(net))
    with pytest.raises(s4tf.ConsumedValueError, match="test_moved_copy_on_write.py"):
        _ = net.first
    assert new.first.w.shape == (3, 2)


@pytest.mark.parametrize("entry", ENTRIES)
def test_alias_keeps_the_old_value(entry):
    net = make_net()
    old = net
    snap = snapshot(old)
    if entry == "method":
        net = net.moved(along=grad_of(net))
    else:
        net = s4tf.moved(net, along=grad_of(net))
    assert_same(old, snap)
    assert_values(net, [x + 1 for x in snap])
    assert old.cell is not net.cell


def test_shared_layer_container_tensor_list_view_and_closure_are_all_kept():
    net = make_net()
    other = Net(net.first, make_net(1).second, [], {}, 1.0)
    kept_tensor = [net.second.w]
    view = net.second.b.numpy()
    in_dict = {"table": net.table}
    get_extra = (lambda extra: lambda: extra)(net.extra)
    observed = [snapshot(other), np.array(kept_tensor[0]), view.copy(),
                np.array(in_dict["table"]["k"]), np.array(get_extra()[0])]
    ids = storage_ids(net)
    net = net.moved(along=grad_of(net))
    now = [snapshot(other), np.array(kept_tensor[0]), view, np.array(in_dict["table"]["k"]),
           np.array(get_extra()[0])]
    assert_same(other, observed[0])
    for got, want in zip(now[1:], observed[1:], strict=True):
        np.testing.assert_array_equal(got, want)
    assert storage_ids(net) != ids  # the shared parts were copied ...
    assert len(set(storage_ids(net)) & set(ids)) == 0  # ... and here every part is shared


def test_model_inside_a_list_is_kept():
    net = make_net()
    holder = [net]
    snap = snapshot(net)
    net = net.moved(along=grad_of(net))
    assert_same(holder[0], snap)


def test_kept_pullback_still_sees_old_values():
    net = make_net()
    _, pullback = s4tf.value_with_pullback(net, of=lambda m: (m.first.w * m.first.w).sum())
    before = pullback(s4tf.Tensor(1.0)).first.w.numpy().copy()
    net = net.moved(along=grad_of(net))
    np.testing.assert_array_equal(pullback(s4tf.Tensor(1.0)).first.w.numpy(), before)


def test_helper_function_between_caller_and_move_copies():
    def step(m, g):
        return m.moved(along=g)

    net = make_net()
    snap = snapshot(net)
    new = step(net, grad_of(net))
    assert_same(net, snap)
    assert_values(new, [x + 1 for x in snap])


def test_module_level_and_attribute_bindings_move_in_place():
    namespace = {"make_net": make_net, "grad_of": grad_of, "storage_ids": storage_ids}
    exec("model = make_net()\nids = storage_ids(model)\nmodel = model.moved(along=grad_of(model))\n"
         "same = storage_ids(model) == ids\n", namespace)
    assert namespace["same"]

    class Trainer:
        def __init__(self):
            self.model = make_net()

        def step(self):
            self.model = self.model.moved(along=grad_of(self.model))

    trainer = Trainer()
    ids = storage_ids(trainer.model)
    trainer.step()
    assert storage_ids(trainer.model) == ids
    seen = trainer.model
    snap = snapshot(seen)
    trainer.step()
    assert_same(seen, snap)


def test_consume_false_and_always_copy(monkeypatch):
    net = make_net()
    ids = storage_ids(net)
    new = net.moved(along=grad_of(net), consume=False)
    assert not set(storage_ids(new)) & set(ids)
    assert storage_ids(net) == ids  # still usable
    monkeypatch.setenv("S4TF_COPY_ON_WRITE", "always-copy")
    net = net.moved(along=grad_of(net))
    assert not set(storage_ids(net)) & set(ids)


def test_zero_tangent_returns_the_value_itself():
    net = make_net()
    assert net.moved(along=None) is net
    assert s4tf.moved(net, along=0.0) is net


def test_mismatched_tangent_is_rejected_before_anything_is_consumed():
    net = Inner(s4tf.zeros([3]), s4tf.zeros([2]))
    bad = Inner.TangentVector(w=s4tf.ones([4]), b=s4tf.ones([2]))
    with pytest.raises(ValueError, match=r"'w' has shape \(4,\)"):
        net = net.moved(along=bad)
    assert net.w.shape == (3,)  # not consumed
    with pytest.raises(TypeError, match="TangentVector"):
        net = net.moved(along=Net.TangentVector())
    assert net.b.shape == (2,)


def test_scalar_and_broadcast_tangents_match_the_copy():
    net = Inner(s4tf.Tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3)), s4tf.zeros([3]))
    along = Inner.TangentVector(w=s4tf.Tensor(np.ones(3, np.float32)), b=0.5)
    copied = net.moved(along=along, consume=False)
    ids = storage_ids(net)
    net = net.moved(along=along)
    assert storage_ids(net) == ids
    for a, b in zip(snapshot(net), snapshot(copied), strict=True):
        np.testing.assert_array_equal(a, b)


def test_debug_reports_a_copying_move(monkeypatch, capsys):
    monkeypatch.setenv("S4TF_DEBUG", "1")
    kept = [s4tf.zeros([300_000])]
    net = Inner(kept[0], s4tf.zeros([2]))
    net = net.moved(along=Inner.TangentVector(w=s4tf.ones([300_000]), b=s4tf.ones([2])))
    err = capsys.readouterr().err
    assert "moved" in err and "a list" in err


def test_lazy_backend_consumes_and_donates_the_old_buffers():
    pytest.importorskip("jax")
    xla = s4tf.xla
    with s4tf.backend("xla"):
        net = Inner(s4tf.ones([64]), s4tf.ones([64]))
        s4tf.barrier()
        xla.reset_metrics()
        new = net.moved(along=Inner.TangentVector(w=s4tf.ones([64]), b=s4tf.ones([64])))
        with pytest.raises(s4tf.ConsumedValueError):
            _ = net.w
        del net
        s4tf.barrier()
        assert xla.metrics()["donated_buffers"] >= 2
        assert new.w.tolist() == [2.0] * 64
        old = new
        new = new.moved(along=Inner.TangentVector(w=s4tf.ones([64]), b=s4tf.ones([64])))
        s4tf.barrier()
        assert old.w.tolist() == [2.0] * 64  # a kept value is neither changed nor donated
        assert new.w.tolist() == [3.0] * 64


ALIAS_KINDS = ["root", "first", "w", "extra", "view", "list_item", "cell"]


def _take(net, kind):
    return {"root": lambda: net, "first": lambda: net.first, "w": lambda: net.first.w,
            "extra": lambda: net.extra, "view": lambda: net.second.b.numpy(),
            "list_item": lambda: [net.table["k"]], "cell": lambda: net.cell}[kind]()


def _observe(alias):
    if isinstance(alias, np.ndarray):
        return [alias.copy()]
    if isinstance(alias, s4tf.State):
        return [np.array(alias.value)]
    if isinstance(alias, list) and alias and isinstance(alias[0], s4tf.Tensor):
        return [np.array(alias[0])]
    return snapshot(alias)


@settings(max_examples=30, deadline=None)
@given(kinds=st.lists(st.sampled_from(ALIAS_KINDS), max_size=4), steps=st.integers(1, 3),
       seed=st.integers(0, 2**16), method=st.booleans())
def test_random_aliasing_never_changes_an_observed_value(kinds, steps, seed, method):
    net = make_net(seed)
    want = snapshot(net)
    aliases = [_take(net, kind) for kind in kinds]
    observed = [_observe(a) for a in aliases]
    for _ in range(steps):
        if method:
            net = net.moved(along=grad_of(net))
        else:
            net = s4tf.moved(net, along=grad_of(net))
        want = [x + 1 for x in want]
    for alias, before in zip(aliases, observed, strict=True):
        for got, expected in zip(_observe(alias), before, strict=True):
            np.testing.assert_array_equal(got, expected)
    assert_values(net, want)


@pytest.mark.parametrize("scope", ["function", "module"])
@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("shape", sorted(call_shapes.SHAPES))
def test_each_call_shape_keeps_or_consumes_as_the_contract_says(shape, entry, scope):
    make = lambda: make_net(5)  # noqa: E731
    g = grad_of(make())
    names = call_shapes.run(call_shapes.SHAPES[shape], entry, scope, False, make, None, g)
    call_shapes.check(call_shapes.SHAPES[shape], False, names,
                      make().moved(along=g, consume=False))


@pytest.mark.parametrize("entry", ENTRIES)
def test_a_model_moved_out_of_a_list_or_an_attribute_stays_there(entry):
    models, holder = [make_net()], call_shapes.Holder()
    holder.model = make_net(1)
    snaps = snapshot(models[0]), snapshot(holder.model)
    g = grad_of(models[0])
    if entry == "method":
        a, b = models[0].moved(along=g), holder.model.moved(along=g)
    else:
        a, b = s4tf.moved(models[0], along=g), s4tf.moved(holder.model, along=g)
    assert_same(models[0], snaps[0])
    assert_same(holder.model, snaps[1])
    assert_values(a, [x + 1 for x in snaps[0]])
    assert_values(b, [x + 1 for x in snaps[1]])
