"""Differentiable values: the Manifesto's Point and PointPair, tangent vectors."""

import dataclasses

import pytest

import s4tf
from s4tf.testing import assert_allclose


class Point(s4tf.Differentiable):
    x: float
    y: float
    label: str = s4tf.no_derivative(default="p")


class PointPair(s4tf.Differentiable):
    p1: Point
    p2: Point


class Scaled(s4tf.Differentiable):
    weight: s4tf.Tensor
    scale: float = s4tf.no_derivative(default=2.0)
    steps: int = 3

    def __init__(self, n: int):
        self.weight = s4tf.ones([n])

    def energy(self, x):
        return (self.weight * x).sum() * self.scale


def test_nested_tangent_vectors_are_synthesized():
    tangent = PointPair.TangentVector(
        p1=Point.TangentVector(x=0.01, y=0.0), p2=Point.TangentVector(x=0.01, y=0.0)
    )
    assert Point.TangentVector._s4tf_field_names == ("x", "y")  # label has no derivative
    pair = PointPair(Point(1.0, 2.0), Point(3.0, 4.0))
    kept = pair.moved(along=tangent, consume=False)
    assert (kept.p1.x, kept.p1.y, kept.p2.x) == (1.01, 2.0, 3.01)
    assert pair.p1.x == 1.0  # consume=False made a new value and kept the old one
    moved = pair.moved(along=tangent)
    assert (moved.p1.x, moved.p1.y, moved.p2.x) == (1.01, 2.0, 3.01)
    with pytest.raises(s4tf.ConsumedValueError, match="test_differentiable.py"):
        _ = pair.p1  # the sole reference was consumed by the move


def test_gradient_of_a_function_of_points():
    pair = PointPair(Point(1.0, 2.0), Point(3.0, 5.0))

    def distance_squared(pp):
        dx, dy = pp.p1.x - pp.p2.x, pp.p1.y - pp.p2.y
        return dx * dx + dy * dy

    grad = s4tf.gradient(pair, of=distance_squared)
    assert isinstance(grad, PointPair.TangentVector)
    assert grad == PointPair.TangentVector(
        p1=Point.TangentVector(x=-4.0, y=-6.0), p2=Point.TangentVector(x=4.0, y=6.0)
    )
    df = s4tf.differential(pair, of=distance_squared)
    assert df(grad) == grad.squared_norm() == 104.0  # a directional derivative along the gradient


def test_tangent_vector_arithmetic():
    a = Point.TangentVector(x=1.0, y=4.0)
    b = Point.TangentVector(x=3.0, y=2.0)
    assert a + b == Point.TangentVector(x=4.0, y=6.0)
    assert a - b == Point.TangentVector(x=-2.0, y=2.0)
    assert -a == Point.TangentVector(x=-1.0, y=-4.0)
    assert a * 2.0 == 2.0 * a == Point.TangentVector(x=2.0, y=8.0)
    assert a / 2.0 == Point.TangentVector(x=0.5, y=2.0)
    assert a * b == Point.TangentVector(x=3.0, y=8.0)
    assert a / b == Point.TangentVector(x=1 / 3, y=2.0)
    assert a.sqrt() == Point.TangentVector(x=1.0, y=2.0)
    assert a.dot(b) == 11.0 and a.squared_norm() == 17.0
    assert s4tf.tree_map(lambda v: v * 10, a) == Point.TangentVector(x=10.0, y=40.0)


def test_zero_acts_as_zero_for_any_shape():
    tv = Scaled.TangentVector(weight=s4tf.Tensor([1.0, 2.0, 3.0]))
    zero = Scaled.TangentVector.zero
    assert_allclose((zero + tv).weight, [1.0, 2.0, 3.0])
    assert_allclose((tv - zero).weight, [1.0, 2.0, 3.0])
    assert_allclose((zero - tv).weight, [-1.0, -2.0, -3.0])
    assert Point.TangentVector.zero + Point.TangentVector(x=1.0, y=1.0) == Point.TangentVector(x=1.0, y=1.0)
    model = Scaled(3)
    assert model.moved(along=zero).weight.tolist() == [1.0, 1.0, 1.0]


def test_moved_replace_and_frozen_after_custom_init():
    model = Scaled(2)
    assert model.scale == 2.0 and model.steps == 3
    with pytest.raises(dataclasses.FrozenInstanceError, match="replace"):
        model.weight = s4tf.zeros([2])
    changed = s4tf.replace(model, weight=s4tf.zeros([2]), steps=5)
    assert changed.weight.tolist() == [0.0, 0.0] and changed.steps == 5
    assert model.weight.tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match="no field"):
        s4tf.replace(model, bogus=1)
    moved = s4tf.moved(model, along=Scaled.TangentVector(weight=s4tf.Tensor([0.5, -0.5])))
    assert moved.weight.tolist() == [1.5, 0.5] and moved.scale == 2.0


def test_no_derivative_fields_are_excluded():
    assert Scaled.TangentVector._s4tf_field_names == ("weight",)
    grad = s4tf.gradient(Scaled(2), of=lambda m: m.energy(s4tf.Tensor([3.0, 4.0])))
    assert grad.weight.tolist() == [6.0, 8.0]
    assert not hasattr(grad, "scale") or grad.__dict__.get("scale") is None
    leaves = s4tf.tree_flatten(Scaled(2), differentiable=True)[0]
    assert len(leaves) == 1


def test_tree_flatten_unflatten_map_on_containers():
    value = {"a": [1.0, s4tf.Tensor([2.0])], "b": (Point(3.0, 4.0), "text")}
    leaves, treedef = s4tf.tree_flatten(value)
    assert len(leaves) == 4
    rebuilt = s4tf.tree_unflatten(treedef, [leaf * 2 for leaf in leaves])
    assert rebuilt["b"][0].y == 8.0 and rebuilt["b"][1] == "text"
    doubled = s4tf.tree_map(lambda v: v + 1, value)
    assert doubled["a"][0] == 2.0 and doubled["b"][0].label == "p"


def test_gradient_of_containers_of_floats_and_tensors():
    grad = s4tf.gradient([1.0, (2.0, s4tf.Tensor([3.0]))], of=lambda v: v[0] * v[1][0] * v[1][1].sum())
    assert grad[0] == 6.0 and grad[1][0] == 3.0 and grad[1][1].tolist() == [2.0]
    grad = s4tf.gradient({"w": 2.0, "b": 1.0}, of=lambda d: d["w"] * d["w"] + d["b"])
    assert grad == {"w": 4.0, "b": 1.0}


def test_moved_gives_the_new_value_its_own_state_cells():
    class Stats(s4tf.Differentiable):
        w: s4tf.Tensor
        running: s4tf.State = s4tf.no_derivative(default=None)

    old = Stats(w=s4tf.ones([2]), running=s4tf.State(s4tf.zeros([2])))
    new = old.moved(along=Stats.TangentVector(w=s4tf.ones([2])), consume=False)
    assert new.running is not old.running
    new.running.value = new.running.value + 1
    assert old.running.value.tolist() == [0.0, 0.0]
    assert new.w.tolist() == [2.0, 2.0]


def test_an_attribute_without_a_field_annotation_is_refused_at_construction():
    from s4tf import layers

    class MLP(s4tf.Layer):
        out: layers.Dense

        def __init__(self):
            self.hidden = layers.Dense(2, 3)
            self.out = layers.Dense(3, 1)

        def __call__(self, x):
            return self.out(self.hidden(x))

    with pytest.raises(TypeError, match=r"MLP\.hidden was assigned in __init__ but has no field "
                                        r"annotation; add `hidden: layers\.Dense` to the class body"):
        MLP()


@pytest.mark.parametrize("value, annotation", [
    (lambda: s4tf.ones([2]), "s4tf.Tensor"),
    (lambda: 1.5, "float"),
    (lambda: [1.0], "list"),
    (lambda: Point(1.0, 2.0), "Point"),
])
def test_every_differentiable_refuses_unannotated_attributes_private_ones_too(value, annotation):
    class Holder(s4tf.Differentiable):
        kept: float

        def __init__(self, name):
            self.kept = 1.0
            setattr(self, name, value())

    for name in ("extra", "_cache"):
        with pytest.raises(TypeError, match=rf"Holder\.{name} .* add `{name}: {annotation}`"):
            Holder(name)


def test_a_subclass_may_set_its_parents_fields_and_its_own_in_nested_inits():
    class Base(s4tf.Differentiable):
        a: float

        def __init__(self):
            self.a = 1.0

    class Child(Base):
        b: float

        def __init__(self):
            super().__init__()
            self.b = 2.0

    child = Child()
    assert (child.a, child.b) == (1.0, 2.0)

    class Forgetful(Base):
        b: float

        def __init__(self):
            super().__init__()
            self.c = 2.0

    with pytest.raises(TypeError, match=r"Forgetful\.c was assigned"):
        Forgetful()
