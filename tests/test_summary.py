"""summary() and parameter_count(), on LeNet-5 from the paper's Figure 6 (s4tf.models.LeNet)."""

import io
import threading

import pytest

import s4tf
from s4tf import layers
from s4tf.models import LeNet


def test_lenet_has_61706_parameters_and_trains_a_step():
    model = LeNet()
    assert s4tf.parameter_count(model) == 61706
    x = s4tf.random.normal([2, 28, 28, 1], seed=0)
    labels = s4tf.Tensor([3, 7])
    loss, grad = s4tf.value_with_gradient(
        model, of=lambda m: s4tf.softmax_cross_entropy(logits=m(x), labels=labels))
    assert grad.conv1.filter.shape == (5, 5, 1, 6) and loss.item() > 0


def test_summary_lists_layers_shapes_and_counts():
    out = io.StringIO()
    s4tf.summary(LeNet(), (1, 28, 28, 1), file=out)
    lines = out.getvalue().splitlines()
    rows = {line.split()[0]: line for line in lines[2:10]}
    assert "(1, 28, 28, 6)" in rows["conv1"] and rows["conv1"].rstrip().endswith("156")
    assert "(1, 5, 5, 16)" in rows["pool2"] and rows["pool2"].rstrip().endswith(" 0")
    assert "(1, 400)" in rows["flatten"]
    assert "(1, 10)" in rows["fc3"] and rows["fc3"].rstrip().endswith("850")
    assert lines[-1] == "Total parameters: 61,706"


def test_summary_indents_nested_layers_and_does_not_touch_running_stats():
    bn = layers.BatchNorm(feature_count=3)
    model = layers.Sequential(layers.Sequential(layers.Dense(2, 3), bn), layers.Dense(3, 1))
    out = io.StringIO()
    s4tf.summary(model, (4, 2), file=out)
    text = out.getvalue()
    assert "layers[0] (Sequential)" in text and "  layers[0].layers[1] (BatchNorm)" in text
    assert bn.running_mean.value.tolist() == [0.0, 0.0, 0.0]
    assert s4tf.parameter_count(bn) == 6


def test_summary_totals_trainable_and_non_trainable_values():
    model = layers.Sequential(layers.Dense(2, 3), layers.BatchNorm(feature_count=3))
    out = io.StringIO()
    s4tf.summary(model, (4, 2), file=out)
    # Dense 2*3 + 3 and BatchNorm offset + scale are trained; its two running statistics are not.
    assert out.getvalue().splitlines()[-3:] == [
        "Trainable parameters: 15", "Non-trainable parameters: 6", "Total parameters: 21"]
    out = io.StringIO()
    s4tf.summary(LeNet(), (1, 28, 28, 1), file=out)
    assert out.getvalue().splitlines()[-3:-1] == ["Trainable parameters: 61,706",
                                                 "Non-trainable parameters: 0"]


def test_summary_collapses_blocks_below_max_depth():
    class Block(s4tf.Layer):
        inner: layers.Dense
        norm: layers.BatchNorm

        def __init__(self):
            self.inner = layers.Dense(3, 3)
            self.norm = layers.BatchNorm(feature_count=3)

        def __call__(self, x):
            return self.norm(self.inner(x))

    class Net(s4tf.Layer):
        stem: layers.Dense
        blocks: list
        head: layers.Sequential

        def __init__(self):
            self.stem = layers.Dense(2, 3)
            self.blocks = [Block(), Block()]
            self.head = layers.Sequential(Block(), layers.Dense(3, 1))

        def __call__(self, x):
            for block in self.blocks:
                x = block(self.stem(x) if block is self.blocks[0] else x)
            return self.head(x)

    def names(**options):
        out = io.StringIO()
        s4tf.summary(Net(), (4, 2), file=out, **options)
        lines = out.getvalue().splitlines()
        return [line.split()[0] for line in lines[2:lines.index(lines[1], 2)]]

    # A Sequential's items sit at its own level; a block's layers one deeper.
    assert names() == ["stem", "blocks[0]", "blocks[1]", "head", "head.layers[0]", "head.layers[1]"]
    assert names(max_depth=2) == [
        "stem", "blocks[0]", "blocks[0].inner", "blocks[0].norm", "blocks[1]", "blocks[1].inner",
        "blocks[1].norm", "head", "head.layers[0]", "head.layers[0].inner",
        "head.layers[0].norm", "head.layers[1]"]
    assert names(max_depth=None) == names(max_depth=2)
    out = io.StringIO()
    s4tf.summary(Net(), (4, 2), file=out)
    row = next(line for line in out.getvalue().splitlines() if line.startswith("blocks[0]"))
    assert row.rstrip().endswith(" 18")  # the collapsed block holds its layers' 12 + 6


def test_summary_rejects_a_bad_max_depth():
    with pytest.raises(ValueError, match=r"max_depth must be an int >= 1 or None .*received max_depth=0"):
        s4tf.summary(LeNet(), (1, 28, 28, 1), max_depth=0)


def test_summaries_in_two_threads_each_list_their_own_model():
    # summary() listens to layer calls on its own thread only: one running in another thread
    # at the same time neither sees this thread's layers nor hides them from this one.
    inside, release = threading.Event(), threading.Event()

    class Waiting(s4tf.Layer):
        def __call__(self, x):
            inside.set()
            release.wait(10)
            return x

    blocked = layers.Sequential(Waiting(), layers.Dense(2, 5))
    texts = {"other": io.StringIO(), "mine": io.StringIO()}
    thread = threading.Thread(target=lambda: s4tf.summary(blocked, (1, 2), file=texts["other"]))
    thread.start()
    assert inside.wait(10)
    s4tf.summary(layers.Sequential(layers.Dense(2, 3), layers.Dense(3, 4)), (1, 2),
                 file=texts["mine"])
    release.set()
    thread.join(10)
    mine, other = texts["mine"].getvalue(), texts["other"].getvalue()
    assert "(1, 4)" in mine and "Waiting" not in mine and "(1, 5)" not in mine
    assert "Waiting" in other and "(1, 5)" in other and "(1, 4)" not in other
