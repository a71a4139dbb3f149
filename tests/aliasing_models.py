"""The model and observers the copy-on-write suites share (opt.update and moved)."""

import numpy as np

import s4tf


class Inner(s4tf.Differentiable):
    w: s4tf.Tensor
    b: s4tf.Tensor


class Net(s4tf.Differentiable):
    first: Inner
    second: Inner
    extra: list
    table: dict
    scale: float
    cell: s4tf.State = s4tf.no_derivative(default=None)


def make_net(seed=0):
    rng = np.random.default_rng(seed)
    t = lambda *shape: s4tf.Tensor(rng.normal(size=shape).astype(np.float32))  # noqa: E731
    return Net(Inner(t(3, 2), t(2)), Inner(t(2, 2), t(2)), [t(4)], {"k": t(2)}, 0.5,
               s4tf.State(s4tf.zeros([2])))


def ones_grad(net):
    return s4tf.tree_map(lambda x: x * 0 + 1, net, differentiable=True)


def grad_of(net):
    leaves, treedef = s4tf.tree_flatten(net, differentiable=True)
    return treedef.tangent_unflatten([x * 0 + 1 for x in leaves])


def snapshot(net):
    return [np.array(x, copy=True) for x in s4tf.tree_leaves(net, differentiable=True)]


def storage_ids(net):
    return [id(x._data) for x in s4tf.tree_leaves(net, differentiable=True)
            if isinstance(x, s4tf.Tensor)]


def assert_same(net, snap):
    for got, want in zip(snapshot(net), snap, strict=True):
        np.testing.assert_array_equal(got, want)
