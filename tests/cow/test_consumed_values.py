"""A consumed value still answers repr, type, isinstance and IPython's display; its contents raise."""

import copy
import pprint

import pytest
from aliasing_models import Net, grad_of, make_net

import s4tf
from s4tf import optimizers


def consumed_net():
    net = make_net()
    opt = optimizers.SGD(net)
    new = opt.update(net, grad_of(net))
    assert s4tf.cow.consumed.is_consumed(net) and new is not net
    return net


def test_repr_and_str_name_the_consuming_call():
    net = consumed_net()
    text = repr(net)
    assert text.startswith("<consumed Net: consumed by SGD.update at ")
    assert "test_consumed_values.py:" in text and "new = opt.update(net, grad_of(net))" in text
    assert str(net) == text and f"{net}" == text
    assert pprint.pformat({"model": net}) == "{'model': " + text + "}"


def test_type_and_isinstance_keep_working():
    net = consumed_net()
    assert isinstance(net, Net) and isinstance(net, s4tf.Differentiable)
    assert not isinstance(net, s4tf.Tensor) and not isinstance(net, int)
    assert issubclass(type(net), s4tf.cow.consumed._ConsumedValue)
    assert type(net).__name__ == "ConsumedNet"
    assert net.__class__ is Net


def test_attributes_it_never_had_are_missing_not_consumed():
    net = consumed_net()
    assert not hasattr(net, "_repr_html_")
    assert getattr(net, "_ipython_canary_method_should_not_exist_", None) is None
    with pytest.raises(AttributeError, match="has no attribute '_repr_mimebundle_'"):
        net._repr_mimebundle_  # noqa: B018


def test_ipython_displays_it():
    formatters = pytest.importorskip("IPython.core.formatters")
    net = consumed_net()
    data, metadata = formatters.DisplayFormatter().format(net)
    assert data == {"text/plain": repr(net)}
    pretty = pytest.importorskip("IPython.lib.pretty")
    assert pretty.pretty(net) == repr(net)


@pytest.mark.parametrize("use", [
    lambda v: v.first, lambda v: v(1), lambda v: v == v, lambda v: bool(v), lambda v: hash(v),
    lambda v: copy.deepcopy(v), lambda v: copy.copy(v), lambda v: s4tf.tree_flatten(v),
    lambda v: v.moved(along=grad_of(make_net())), lambda v: v.__dict__,
    lambda v: s4tf.replace(v, scale=1.0),
])
def test_using_its_contents_still_raises(use):
    net = consumed_net()
    with pytest.raises(s4tf.ConsumedValueError, match="consumed by SGD.update at"):
        use(net)
