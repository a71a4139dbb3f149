"""Element-wise rules on bounded blocks: the same numbers, bit for bit, with small temporaries."""

import tracemalloc

import numpy as np
import pytest

import s4tf
from s4tf import optimizers
from s4tf.optimizers.blocks import CHUNK_BYTES, PACK_BYTES, SMALL_SIZE, elementwise


class Model(s4tf.Differentiable):
    big: s4tf.Tensor  # more than two float32 chunks, and not a multiple of one
    wide: s4tf.Tensor  # float64: its chunks hold half as many elements
    middle: s4tf.Tensor  # above SMALL_SIZE, below a chunk: whole
    small: list  # packed: odd sizes, a 0-d tensor among them
    scale: float  # a float leaf: on the host, never packed


def make_model(rng):
    def tensor(shape, dtype=np.float32):
        return s4tf.Tensor(rng.normal(size=shape).astype(dtype))

    return Model(
        big=tensor((1031, 131)),
        wide=tensor((333, 211), np.float64),
        middle=tensor((37, 29)),
        small=[tensor(shape) for shape in [(3,), (5, 7), (999,), (), (1, 1000), (17,)]]
        + [tensor((4, 6), np.float64), tensor((9,), np.float64)],  # a second pack
        scale=0.75,
    )


def make_grads(model, rng):
    leaves, treedef = s4tf.tree_flatten(model, differentiable=True)
    return treedef.tangent_unflatten([
        float(rng.normal()) if isinstance(x, float)
        else s4tf.Tensor(rng.normal(size=x.shape).astype(x.dtype.numpy)) for x in leaves])


def whole(cls):
    """``cls`` with its rule unmarked, so it runs once per whole parameter (the reference)."""
    return type(f"Whole{cls.__name__}", (cls,), {
        "update_parameter": lambda self, *args: cls.update_parameter(self, *args)})


CASES = {
    "SGD": (optimizers.SGD, {"learning_rate": 0.1}),
    "SGD-momentum": (optimizers.SGD, {"learning_rate": 0.1, "momentum": 0.9, "decay": 0.1}),
    "SGD-nesterov": (optimizers.SGD, {"learning_rate": 0.1, "momentum": 0.9, "nesterov": True}),
    "RMSProp": (optimizers.RMSProp, {"learning_rate": 0.01, "decay": 0.1}),
    "AdaGrad": (optimizers.AdaGrad, {"learning_rate": 0.1}),
    "AdaDelta": (optimizers.AdaDelta, {"decay": 0.1}),
    "Adam": (optimizers.Adam, {"learning_rate": 0.01, "decay": 0.1}),
    "AMSGrad": (optimizers.AMSGrad, {"learning_rate": 0.01}),
    "AdamW": (optimizers.AdamW, {"learning_rate": 0.01, "weight_decay": 0.1}),
    "AdaMax": (optimizers.AdaMax, {"learning_rate": 0.01}),
    "RAdam": (optimizers.RAdam, {"learning_rate": 0.01, "beta2": 0.9}),  # rectifies from step 6
}


def train(cls, kwargs, consume, steps=7):
    rng = np.random.default_rng(0)
    model = make_model(rng)
    opt = cls(model, **kwargs)
    for _ in range(steps):
        model = opt.update(model, make_grads(model, rng), consume=consume)
    return model, opt


def assert_identical(a, b):
    (model_a, opt_a), (model_b, opt_b) = a, b
    for x, y in zip(s4tf.tree_leaves(model_a, differentiable=True),
                    s4tf.tree_leaves(model_b, differentiable=True), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    state_a, state_b = opt_a.state_dict(), opt_b.state_dict()
    assert state_a.keys() == state_b.keys()
    for key in state_a:
        np.testing.assert_array_equal(state_a[key], state_b[key], err_msg=key)


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("consume", [True, False], ids=["in-place", "copy"])
def test_blocks_give_the_numbers_of_the_whole_rule_bit_for_bit(name, consume):
    cls, kwargs = CASES[name]
    assert_identical(train(cls, kwargs, consume), train(whole(cls), kwargs, consume))


def test_the_rule_sees_bounded_blocks_and_one_call_for_the_small_parameters():
    seen = []

    class Spy(optimizers.Adam):
        @elementwise
        def update_parameter(self, param, grad, state, constants):
            seen.append((param.size, param.dtype, param.flags.c_contiguous))
            super().update_parameter(param, grad, state, constants)

    model, _ = train(Spy, {}, consume=True, steps=2)
    step = seen[len(seen) // 2:]
    for size, dtype, contiguous in step:
        assert size <= CHUNK_BYTES // dtype.itemsize and contiguous
    sizes = sorted(size for size, _, _ in step)
    small = sum(x.size for x in model.small if x.dtype == s4tf.float32)
    # big: 3 float32 chunks; wide: 3 float64 chunks; middle whole; the 6 small float32
    # ones (2055 elements) in one block, the 2 float64 ones (33) in another; the float
    # leaf alone.
    assert len(step) == 3 + 3 + 1 + 1 + 1 + 1
    assert sum(sizes) == int(model.big.size + model.wide.size + model.middle.size + small + 33 + 1)
    assert {small, 33} <= set(sizes) and small * 4 <= PACK_BYTES and 1000 <= SMALL_SIZE


def test_packed_slots_survive_copies_and_loads_with_the_same_numbers():
    def run(cls):
        rng = np.random.default_rng(1)
        model = make_model(rng)
        opt = cls(model, learning_rate=0.01)
        model = opt.update(model, make_grads(model, rng))  # packs the small slots
        kept = model
        model = opt.update(model, make_grads(model, rng))  # `kept` sees it: a copy
        del kept
        model = opt.update(model, make_grads(model, rng))  # in place again: repacks
        resumed = cls(model, learning_rate=0.01)
        resumed.load_state_dict(opt.state_dict())
        model = resumed.update(model, make_grads(model, rng))
        model = resumed.update(model, make_grads(model, rng))
        return model, resumed

    assert_identical(run(optimizers.Adam), run(whole(optimizers.Adam)))


def test_a_non_contiguous_gradient_runs_whole_with_the_same_numbers():
    def run(cls):
        model = Model(big=s4tf.ones([300, 500]), wide=s4tf.ones([2], dtype=s4tf.float64),
                      middle=s4tf.ones([2]), small=[], scale=1.0)
        opt = cls(model, learning_rate=0.1)
        grad = np.arange(150_000, dtype=np.float32).reshape(500, 300).T / 1e5  # a view
        grads = Model.TangentVector(big=s4tf.Tensor._wrap(grad, model.big._backend))
        return opt.update(model, grads), opt

    assert_identical(run(optimizers.Adam), run(whole(optimizers.Adam)))


def test_an_in_place_update_allocates_blocks_not_a_tensor():
    class Big(s4tf.Differentiable):
        w: s4tf.Tensor

    model = Big(s4tf.ones([2048, 1024]))  # 8 MiB
    grads = Big.TangentVector(w=s4tf.ones([2048, 1024]))
    for cls in (optimizers.Adam, optimizers.AdaDelta, optimizers.SGD):
        opt = cls(model)
        model = opt.update(model, grads)  # the slots exist now
        tracemalloc.start()
        try:
            model = opt.update(model, grads)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        # AdaDelta's rule holds two temporaries; the whole rule would hold 8 MiB each.
        assert peak < 3 * CHUNK_BYTES, (cls.__name__, peak)
