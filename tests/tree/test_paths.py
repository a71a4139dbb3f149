"""s4tf.tree.get and s4tf.tree.at: reading and replacing the part of a value at a dotted path."""

import collections

import numpy as np
import pytest

import s4tf
from s4tf import layers


class Block(s4tf.Layer):
    conv: layers.Conv2D
    norm: layers.BatchNorm

    def __call__(self, x):
        return self.norm(self.conv(x))


class Net(s4tf.Layer):
    blocks: list
    heads: dict

    def __call__(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def make_net():
    return Net([Block(layers.Conv2D((3, 3, 2, 2)), layers.BatchNorm(2)) for _ in range(4)],
               {"main": layers.Dense(2, 3)})


def test_at_replaces_at_any_depth_and_leaves_the_old_value_as_it_was():
    net = make_net()
    new_filter = s4tf.ones([3, 3, 2, 2])
    new = s4tf.tree.at(net, "blocks.3.conv.filter", new_filter)
    assert new.blocks[3].conv.filter is new_filter
    assert not np.array_equal(net.blocks[3].conv.filter.numpy(), new_filter.numpy())
    # Only the containers on the path are new; the rest is shared.
    assert new.blocks[0] is net.blocks[0] and new.heads is net.heads
    assert new.blocks is not net.blocks and new.blocks[3].norm is net.blocks[3].norm
    assert type(new.blocks[3]) is Block
    new = s4tf.tree.at(net, "heads.main.bias", s4tf.Tensor([1.0, 2.0, 3.0]))
    assert new.heads["main"].bias.tolist() == [1.0, 2.0, 3.0] and new.blocks is net.blocks


def test_at_a_state_cell_replaces_its_content_and_tuples_keep_their_type():
    net = make_net()
    new = s4tf.tree.at(net, "blocks.1.norm.running_mean", s4tf.ones([2]))
    assert isinstance(new.blocks[1].norm.running_mean, s4tf.State)
    assert new.blocks[1].norm.running_mean.value.tolist() == [1.0, 1.0]
    assert net.blocks[1].norm.running_mean.value.tolist() == [0.0, 0.0]
    Pair = collections.namedtuple("Pair", "a b")
    assert s4tf.tree.at(Pair(1.0, [2.0]), "1.0", 5.0) == Pair(1.0, [5.0])


def test_get_reads_the_part_at_a_path():
    net = make_net()
    assert s4tf.tree.get(net, "blocks.2.conv") is net.blocks[2].conv
    assert s4tf.tree.get(net, "") is net


@pytest.mark.parametrize(("path", "message"), [
    ("blocks.7.conv", r"'blocks.7.conv': blocks has no '7'; it is a list of 4 \(indices 0 to 3\)"),
    ("blocks.0.cnov", r"blocks.0 has no 'cnov'; its fields are 'conv', 'norm'"),
    ("heads.aux", r"heads has no 'aux'; its keys are 'main'"),
    ("heads.main.bias.x", r"heads.main.bias has no 'x'; it is a Tensor, which has no parts"),
])
def test_a_missing_part_is_named_with_what_is_there(path, message):
    with pytest.raises(KeyError, match=message):
        s4tf.tree.at(make_net(), path, 1.0)
