"""One level at a time (s4tf/tree/children.py): children with path keys, leaf paths,
and maps over several trees where a leaf stands for a subtree."""

import collections

import pytest

import s4tf
from s4tf import layers
from s4tf.checkpoint.structure import encode
from s4tf.tree import tree_children, tree_leaf_paths, tree_leaves, tree_map_broadcast

Pair = collections.namedtuple("Pair", ["first", "second"])


class Point(s4tf.Differentiable):
    x: float
    label: str = s4tf.no_derivative(default="p")


def test_children_name_each_kind_of_container():
    cell = s4tf.State(1.0)
    assert tree_children([1.0, "a"]) == ("list", [(0, 1.0, True), (1, "a", True)])
    assert tree_children(Pair(1.0, 2.0)) == ("tuple", [(0, 1.0, True), (1, 2.0, True)])
    assert tree_children({"k": cell}) == ("dict", [("k", cell, True)])
    assert tree_children(Point(2.0)) == ("node", [("x", 2.0, True), ("label", "p", False)])
    assert tree_children(cell) == ("cell", [(None, 1.0, False)])
    for leaf_or_static in (s4tf.ones([2]), 1.0, 3, "text", None, len):
        assert tree_children(leaf_or_static) == (None, [])


def test_leaf_paths_name_the_optimizers_parameters():
    model = layers.Sequential(layers.Dense(2, 3), layers.BatchNorm(3))
    assert tree_leaf_paths(model, differentiable=True) == [
        "layers.0.weight", "layers.0.bias", "layers.1.offset", "layers.1.scale"]
    value = {"a": [s4tf.ones([2]), 1.0, (2.0, Pair(3.0, s4tf.Tensor([1, 2])))], "n": 3}
    assert tree_leaf_paths(value, differentiable=True) == ["a.0", "a.1", "a.2.0", "a.2.1.0"]
    assert tree_leaf_paths(value) == ["a.0", "a.1", "a.2.0", "a.2.1.0", "a.2.1.1"]
    assert tree_leaf_paths(s4tf.ones([2])) == tree_leaf_paths(2.0) == ["value"]


def test_leaf_paths_of_tensors_are_the_checkpoint_keys():
    # A cell's value stands at the cell's own path, as in checkpoints.
    model = layers.Sequential(layers.Dense(2, 3), layers.BatchNorm(3))
    paths = [path for path, leaf in zip(tree_leaf_paths(model), tree_leaves(model), strict=True)
             if isinstance(leaf, s4tf.Tensor)]
    tensors = {}
    encode(model, tensors)
    assert paths == list(tensors) and "layers.1.running_mean" in paths


def test_a_leaf_meets_every_leaf_of_the_other_trees_subtree():
    tree = {"w": [1.0, 2.0], "p": Pair(3.0, 4.0), "n": Point(5.0, "q")}
    scaled = tree_map_broadcast(lambda a, b: a * b, tree, 2)
    assert scaled["w"] == [2.0, 4.0] and scaled["p"] == Pair(6.0, 8.0)
    assert type(scaled["n"]) is Point and (scaled["n"].x, scaled["n"].label) == (10.0, "qq")
    summed = tree_map_broadcast(lambda a, b: a + (0.0 if b is None else b), tree,
                                {"w": None, "p": (1.0, 1.0), "n": Point(1.0, "!")})
    assert summed["w"] == [1.0, 2.0] and summed["p"] == Pair(4.0, 5.0)
    assert type(summed["p"]) is Pair and (summed["n"].x, summed["n"].label) == (6.0, "q!")


def test_is_leaf_keeps_a_container_whole():
    kept = tree_map_broadcast(lambda a, b: (a, b), [Point(1.0), 2.0], [7, 8],
                              is_leaf=lambda v: isinstance(v, Point))
    assert kept[0][0].x == 1.0 and kept[0][1] == 7 and kept[1] == (2.0, 8)


@pytest.mark.parametrize("lead, other", [
    ([1.0, 2.0], [1.0]),
    ([1.0, 2.0], [1.0, 2.0, 3.0]),
    ({"a": 1.0, "b": 2.0}, {"b": 1.0}),
    ([1.0], {0: 2.0}),
    (Point(1.0), [1.0, "p"]),
])
def test_containers_that_differ_in_structure_are_refused(lead, other):
    with pytest.raises(ValueError, match="the trees differ in structure"):
        tree_map_broadcast(lambda a, b: a + b, lead, other)


def test_a_dict_or_node_may_hold_more_keys_than_the_lead():
    assert tree_map_broadcast(lambda a, b: a + b, {"a": 1.0}, {"a": 2.0, "b": 3.0}) == {"a": 3.0}
