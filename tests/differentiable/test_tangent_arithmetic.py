"""Tangent-vector arithmetic (s4tf/differentiable/tangent_arithmetic.py): one broadcast map
over the tree with a zero rule, giving what the field-by-field recursion it replaced gave."""

import operator

import numpy as np
import pytest
from hand_written_tangents import Custom
from hypothesis import given, settings
from hypothesis import strategies as st

import s4tf
from s4tf.differentiable import TangentVectorBase


class Pair(s4tf.Differentiable):
    x: object
    y: object




TV = Pair.TangentVector


# The recursion tangent arithmetic used before it became a tree map: the reference.
def _zero(value):
    return value is None or (isinstance(value, float | int) and not isinstance(value, bool)
                             and value == 0)


def _new(cls, fields):
    obj = object.__new__(cls)
    obj.__dict__.update(fields)
    return obj


def reference_combine(a, b, op, zero_left, zero_right):
    if isinstance(a, TangentVectorBase) or isinstance(b, TangentVectorBase):
        cls = type(a) if isinstance(a, TangentVectorBase) else type(b)
        field = lambda v, n: getattr(v, n) if isinstance(v, TangentVectorBase) else v
        return _new(cls, {n: reference_combine(field(a, n), field(b, n), op, zero_left, zero_right)
                          for n in cls._s4tf_field_names})
    if isinstance(a, list | tuple) or isinstance(b, list | tuple):
        seq_a = a if isinstance(a, list | tuple) else [a] * len(b)
        seq_b = b if isinstance(b, list | tuple) else [b] * len(a)
        out = [reference_combine(x, y, op, zero_left, zero_right) for x, y in zip(seq_a, seq_b, strict=False)]
        return type(a if isinstance(a, list | tuple) else b)(out)
    if isinstance(a, dict) or isinstance(b, dict):
        keys = list(a if isinstance(a, dict) else b)
        return {k: reference_combine(a[k] if isinstance(a, dict) else a,
                                     b[k] if isinstance(b, dict) else b, op, zero_left, zero_right)
                for k in keys}
    if zero_left is not None and _zero(a):
        return zero_left(b)
    if zero_right is not None and _zero(b):
        return zero_right(a)
    return op(a if a is not None else 0.0, b if b is not None else 0.0)


def reference_scale(a, fn):
    if isinstance(a, TangentVectorBase):
        return _new(type(a), {n: reference_scale(getattr(a, n), fn) for n in a._s4tf_field_names})
    if isinstance(a, list | tuple):
        return type(a)(reference_scale(x, fn) for x in a)
    if isinstance(a, dict):
        return {k: reference_scale(v, fn) for k, v in a.items()}
    return None if a is None else fn(a)


def _neg(b):
    return reference_scale(b, operator.neg)


REFERENCE = {
    "add": lambda a, b: reference_combine(a, b, operator.add, lambda y: y, lambda x: x),
    "sub": lambda a, b: reference_combine(a, b, operator.sub, _neg, lambda x: x),
    "rsub": lambda a, b: reference_combine(b, a, operator.sub, _neg, lambda x: x),
    "mul": lambda a, b: reference_combine(a, b, operator.mul, lambda y: None, lambda x: None),
    "div": lambda a, b: reference_combine(a, b, operator.truediv, lambda y: None, None),
}
OPERATORS = {
    "add": operator.add, "sub": operator.sub, "rsub": lambda a, b: b - a,
    "mul": operator.mul, "div": operator.truediv,
}


def same(x, y) -> bool:
    if type(x) is not type(y):
        return False
    if isinstance(x, s4tf.Tensor):
        return x.dtype == y.dtype and np.array_equal(x.numpy(), y.numpy(), equal_nan=True)
    if isinstance(x, TangentVectorBase):
        return x.__dict__.keys() == y.__dict__.keys() and all(
            same(x.__dict__[k], y.__dict__[k]) for k in x.__dict__)
    if isinstance(x, list | tuple):
        return len(x) == len(y) and all(same(a, b) for a, b in zip(x, y, strict=True))
    if isinstance(x, dict):
        return x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
    return x == y or (x != x and y != y)


def outcome(fn, *args):
    try:
        return fn(*args)
    except Exception as error:  # the two must fail alike too
        return type(error)


LEAVES = st.one_of(
    st.floats(0.5, 4.0),
    st.floats(0.5, 4.0).map(lambda v: s4tf.Tensor(np.full(2, v, np.float32))),
)


def _containers(children):
    return st.one_of(
        st.lists(children, min_size=1, max_size=3),
        st.tuples(children, children),
        st.dictionaries(st.sampled_from("abc"), children, min_size=1, max_size=3),
        st.builds(TV, x=children, y=children),
    )


TREES = st.recursive(LEAVES, _containers, max_leaves=6)


@st.composite
def like(draw, tree):
    """A tree of ``tree``'s structure, some subtrees replaced by zeros or scalars."""
    if draw(st.integers(0, 5)) == 0:
        return draw(st.sampled_from([None, 0.0, 0, 2.5]))
    if isinstance(tree, TangentVectorBase):
        return TV(x=draw(like(tree.x)), y=draw(like(tree.y)))
    if isinstance(tree, list | tuple):
        return type(tree)(draw(like(item)) for item in tree)
    if isinstance(tree, dict):
        return {k: draw(like(v)) for k, v in tree.items()}
    return draw(LEAVES)


@st.composite
def operands(draw):
    first = TV(x=draw(TREES), y=draw(TREES))
    return first, draw(like(first))


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
@settings(max_examples=150, deadline=None)
@given(operands(), st.sampled_from(sorted(OPERATORS)))
def test_operators_match_the_field_by_field_reference(pair, name):
    a, b = pair
    if name in ("mul", "div") and not isinstance(b, TangentVectorBase):
        return  # by a scalar: the scale rule, tested below
    got, want = outcome(OPERATORS[name], a, b), outcome(REFERENCE[name], a, b)
    assert same(got, want), f"{name}: {got!r} != {want!r}"


@settings(max_examples=60, deadline=None)
@given(TREES.map(lambda t: TV(x=t, y=None)), st.sampled_from([2.0, 0.0, -0.5]))
def test_negation_scaling_and_sqrt_match_the_reference(a, scalar):
    assert same(-a, reference_scale(a, operator.neg))
    assert same(a * scalar, reference_scale(a, lambda x: x * scalar))
    assert same(scalar * a, reference_scale(a, lambda x: scalar * x))
    assert same(a / 2.0, reference_scale(a, lambda x: x / 2.0))
    root = reference_scale(a, lambda x: s4tf.sqrt(x) if isinstance(x, s4tf.Tensor) else x ** 0.5)
    assert same(a.sqrt(), root)


def test_a_hand_written_tangent_vector_keeps_its_own_fields():
    t = Custom.TangentVector(a=1.0, extra=2.0)
    total = t + Custom.TangentVector(a=3.0)
    assert type(total) is Custom.TangentVector and (total.a, total.extra) == (4.0, 2.0)
    assert (t * 2.0).extra == 4.0 and (t - t) == Custom.TangentVector(a=0.0, extra=0.0)
    assert Custom.TangentVector.zero + t == t and t.dot(t) == 5.0
    assert Custom(2.0, 5.0).moved(along=t).a == 3.0


def test_zeros_stand_for_any_shape():
    t = TV(x=[s4tf.ones([2]), {"k": 1.0}], y=None)
    for zero in (None, 0.0, 0, TV.zero):
        total = t + zero
        assert total.x[0].tolist() == [1.0, 1.0] and total.x[1] == {"k": 1.0}
        assert same(total, REFERENCE["add"](t, zero)) and same(zero - t, REFERENCE["rsub"](t, zero))
    assert same(t * TV(x=None, y=3.0), TV(x=[None, {"k": None}], y=None))


def test_sequences_of_different_lengths_are_refused():
    # The recursion it replaced dropped the extra items in silence.
    with pytest.raises(ValueError, match="differ in structure"):
        TV(x=[1.0, 2.0], y=0.0) + TV(x=[1.0], y=0.0)
