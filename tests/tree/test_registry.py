"""The tree's registry (s4tf/tree/registry.py): the walks dispatch on registered classes,
not on Differentiable, and the tree imports nothing above Tensor."""


import numpy as np

import s4tf
from s4tf.tree import node_type, register_cell, register_node, tree_flatten, tree_unflatten


class Pixel:
    """A plain class (no Differentiable) registered as a node."""


class Box:
    __slots__ = ("value", "__weakref__")

    def __init__(self, value):
        self.value = value


class SubBox(Box):
    __slots__ = ()


register_node(Pixel, ("weight", "name"), no_derivative=("name",))
register_cell(Box)


def _pixel(weight, name="p"):
    return node_type(Pixel).build({"weight": weight, "name": name})


def test_differentiable_classes_register_their_field_plan_when_created():
    class Point(s4tf.Differentiable):
        x: float
        y: s4tf.Tensor
        label: str = s4tf.no_derivative(default="p")

    node = node_type(Point)
    assert node.cls is Point and node.fields == ("x", "y", "label")
    assert node.no_derivative == {"label"} and node.tangent is Point.TangentVector
    assert not node.cell and node_type(Point.TangentVector).tangent is Point.TangentVector
    assert node_type(s4tf.State).cell and node_type(int) is None


def test_a_registered_plain_class_flattens_and_rebuilds_like_a_model():
    value = [_pixel(s4tf.ones([2])), _pixel(2.0, "q")]
    leaves, treedef = tree_flatten(value, differentiable=True)
    assert [type(x).__name__ for x in leaves] == ["Tensor", "float"]
    rebuilt = tree_unflatten(treedef, [leaves[0] * 3, 5.0])
    assert type(rebuilt[0]) is Pixel and rebuilt[0].weight.tolist() == [3.0, 3.0]
    assert (rebuilt[1].weight, rebuilt[1].name) == (5.0, "q")
    assert len(tree_flatten(value)[0]) == 2  # the names are strings: static either way


def test_a_registered_cell_is_entered_only_outside_differentiation():
    box = SubBox(s4tf.ones([3]))  # a subclass finds its base's registration
    assert node_type(SubBox) is node_type(Box)
    leaves, treedef = tree_flatten({"box": box})
    assert len(leaves) == 1 and type(tree_unflatten(treedef, leaves)["box"]) is SubBox
    leaves, treedef = tree_flatten({"box": box}, differentiable=True)
    assert leaves == [] and tree_unflatten(treedef, [])["box"] is box  # static: the same cell
    np.testing.assert_array_equal(box.value.numpy(), np.ones(3))

