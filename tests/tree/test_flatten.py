"""Pytrees (s4tf/tree/flatten.py): the exact-type fast paths and cached per-class plans
must flatten and rebuild exactly as the general isinstance path does."""

import collections

import numpy as np
import pytest
from hand_written_tangents import Custom

import s4tf
from s4tf.tree import TreeDef


class Layer(s4tf.Differentiable):
    weight: s4tf.Tensor
    bias: s4tf.Tensor
    rate: float = s4tf.no_derivative(default=0.5)
    name: str = "layer"


class Stack(s4tf.Differentiable):
    layers: list
    gain: float


Pair = collections.namedtuple("Pair", ["first", "second"])


class FloatSubclass(float):
    pass


def _layer(seed=0):
    rng = np.random.default_rng(seed)
    return Layer(s4tf.Tensor(rng.standard_normal((2, 3)).astype(np.float32)),
                 s4tf.Tensor(rng.standard_normal(3).astype(np.float32)))


def test_plans_differ_between_differentiable_and_plain_flattening():
    layer = _layer()
    diff_leaves, diff_def = s4tf.tree_flatten(layer, differentiable=True)
    all_leaves, all_def = s4tf.tree_flatten(layer)
    # no_derivative's float is a leaf only when flattening everything.
    assert [type(x).__name__ for x in diff_leaves] == ["Tensor", "Tensor"]
    assert len(all_leaves) == 3 and all_leaves[2] == 0.5
    assert diff_def != all_def
    # The cached plans do not leak between the two modes on repeated calls.
    assert len(s4tf.tree_flatten(layer, differentiable=True)[0]) == 2
    assert len(s4tf.tree_flatten(layer)[0]) == 3
    rebuilt = s4tf.tree_unflatten(diff_def, diff_leaves)
    assert type(rebuilt) is Layer and rebuilt.rate == 0.5 and rebuilt.name == "layer"
    assert rebuilt.weight is layer.weight


def test_subclasses_take_the_general_path_with_the_same_result():
    value = {"pair": Pair(1.0, s4tf.ones([2])), "f": FloatSubclass(2.0), "n": np.float64(3.0),
             "ints": s4tf.Tensor([1, 2]), "text": "t"}
    leaves, treedef = s4tf.tree_flatten(value, differentiable=True)
    assert [float(x) if not isinstance(x, s4tf.Tensor) else x.shape for x in leaves] == [
        1.0, (2,), 2.0, 3.0]
    rebuilt = s4tf.tree_unflatten(treedef, leaves)
    assert type(rebuilt["pair"]) is Pair and rebuilt["text"] == "t"
    assert rebuilt["ints"].tolist() == [1, 2]  # a non-floating tensor is structure


def test_nested_lists_and_tuples_rebuild_in_order():
    stack = Stack([_layer(0), _layer(1)], 2.0)
    leaves, treedef = s4tf.tree_flatten((stack, [1.0, (2.0,)]), differentiable=True)
    assert len(leaves) == 7 and treedef.num_leaves == 7
    doubled = s4tf.tree_unflatten(treedef, [x * 2 for x in leaves])
    assert doubled[1] == [2.0, (4.0,)] and doubled[0].gain == 4.0
    np.testing.assert_allclose(doubled[0].layers[1].bias.numpy(), _layer(1).bias.numpy() * 2)


def test_wrong_leaf_counts_name_the_problem():
    treedef = s4tf.tree_flatten(_layer(), differentiable=True)[1]
    with pytest.raises(ValueError, match="too few leaves"):
        treedef.unflatten([s4tf.ones([2, 3])])
    with pytest.raises(ValueError, match="too many leaves"):
        treedef.unflatten([s4tf.ones([1])] * 3)
    leaf = s4tf.tree_flatten(1.0)[1]
    with pytest.raises(ValueError, match="too few leaves"):
        leaf.unflatten([])
    with pytest.raises(ValueError, match="too many leaves"):
        leaf.unflatten([1.0, 2.0])
    assert leaf.unflatten(iter([5.0])) == 5.0


def test_tangent_unflatten_builds_synthesized_and_hand_written_tangents():
    layer = _layer()
    treedef = s4tf.tree_flatten(layer, differentiable=True)[1]
    tangent = treedef.tangent_unflatten([s4tf.ones([2, 3]), None])
    assert type(tangent) is Layer.TangentVector and tangent.bias is None
    custom_def = s4tf.tree_flatten(Custom(1.0, 2.0), differentiable=True)[1]
    custom_tangent = custom_def.tangent_unflatten([3.0, 4.0])
    assert (custom_tangent.a, custom_tangent.extra) == (3.0, None)


def test_leaf_structures_are_shared_and_compare_equal():
    first, second = s4tf.tree_flatten(s4tf.ones([2]))[1], s4tf.tree_flatten(1.0)[1]
    assert isinstance(first, TreeDef) and first == second and first.num_leaves == 1
