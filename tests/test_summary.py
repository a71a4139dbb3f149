"""summary() and parameter_count(), on LeNet-5 from the paper's Figure 6 (s4tf.models.LeNet)."""

import io

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
