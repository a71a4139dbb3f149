"""A model whose root is a plain container is copied by every update: said once, with the fix."""

import warnings

import pytest

import s4tf
from s4tf import optimizers
from s4tf.optimizers import CopiedUpdateWarning


class Params(s4tf.Differentiable):
    w: s4tf.Tensor


def caught(fn):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        fn()
    return [w for w in seen if issubclass(w.category, CopiedUpdateWarning)]


def test_a_list_root_warns_once_per_line_with_the_fix():
    def steps():
        params = [s4tf.ones([2]), 0.5]
        opt = optimizers.SGD(params)
        for _ in range(3):
            params = opt.update(params, [s4tf.ones([2]), 1.0])  # the line that warns
        params = opt.update(params, [s4tf.ones([2]), 1.0])  # another line: once more

    seen = caught(steps)
    assert len(seen) == 2
    message = str(seen[0].message)
    assert "SGD.update copied every parameter of a list" in message
    assert "s4tf.Differentiable" in message and "consume=False" in message
    assert "params = opt.update(params, [s4tf.ones([2]), 1.0])  # the line that warns" in message
    assert seen[0].filename == __file__  # points at the user's line, not at s4tf


def test_each_optimizer_class_warns_for_itself_and_dicts_and_tuples_warn_too():
    def steps():
        for cls in (optimizers.SGD, optimizers.Adam):
            for params, grads in (({"w": s4tf.ones([2])}, {"w": s4tf.ones([2])}),
                                  ((s4tf.ones([2]),), (s4tf.ones([2]),))):
                cls(params).update(params, grads)

    seen = caught(steps)
    assert [str(w.message).split(" copied")[0] for w in seen] == ["SGD.update", "Adam.update"]
    assert "of a dict" in str(seen[0].message)


def test_no_warning_when_copying_is_said_or_cannot_be_helped(monkeypatch):
    params = [s4tf.ones([2])]
    model = Params(s4tf.ones([2]))

    def steps():
        optimizers.SGD(params).update(params, [s4tf.ones([2])], consume=False)
        opt = optimizers.SGD(model)
        opt.update(model, Params.TangentVector(w=s4tf.ones([2])))  # a Differentiable
        optimizers.SGD([1.0]).update([1.0], [1.0])  # floats: never written in place
        monkeypatch.setenv("S4TF_COPY_ON_WRITE", "always-copy")
        optimizers.SGD(params).update(params, [s4tf.ones([2])])  # every update copies

    assert caught(steps) == []


def test_the_warning_can_be_made_an_error():
    params = [s4tf.ones([2])]
    with warnings.catch_warnings():
        warnings.simplefilter("error", CopiedUpdateWarning)
        with pytest.raises(CopiedUpdateWarning):
            optimizers.RMSProp(params).update(params, [s4tf.ones([2])])
