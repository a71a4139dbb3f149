"""Primitive dispatch (s4tf/ops/primitive.py): JAX-style promotion of mixed operands and
the single-argument and tracer fast paths."""

import re

import numpy as np
import pytest

import s4tf
from s4tf.ops.primitive import result_dtype


@pytest.mark.parametrize("args, expected", [
    ((s4tf.ones([2], dtype=s4tf.float16), 2.0), s4tf.float16),      # a weak float keeps float16
    ((s4tf.Tensor([1, 2]), 2.5), s4tf.float32),                       # an int tensor lifts to float32
    ((s4tf.Tensor([True]), 3), s4tf.int32),                           # bool with a weak int
    ((s4tf.Tensor([1, 2]), None), s4tf.float32),                      # None counts as a weak float
    ((np.ones(2, np.float64), s4tf.ones([2])), s4tf.float64),         # NumPy arrays are typed
    ((np.float64(1.0), 2), s4tf.float32),                             # NumPy scalars are weak
    ((np.int64(1), True), s4tf.int32),
    ((True, np.bool_(False)), s4tf.bool),
    ((), s4tf.float32),
])
def test_result_dtype_promotes_like_jax(args, expected):
    assert result_dtype(args) == expected


def test_where_keeps_its_condition_and_promotes_the_branches():
    cond = s4tf.Tensor([True, False])
    out = s4tf.where(cond, s4tf.Tensor([1, 2]), 0.5)
    assert out.dtype == s4tf.float32 and out.tolist() == [1.0, 0.5]
    half = s4tf.where(cond, s4tf.ones([2], dtype=s4tf.float16), 0.0)
    assert half.dtype == s4tf.float16


def test_mixed_operands_and_bad_operands():
    assert (s4tf.Tensor([1, 2]) + np.array([0.5, 0.5], np.float32)).tolist() == [1.5, 2.5]
    with pytest.raises(TypeError, match="Convert it with s4tf.Tensor"):
        s4tf.maximum(s4tf.ones([2]), "text")


def test_unary_ops_of_tracers_reach_their_trace():
    x = s4tf.Tensor([0.5, 1.0])
    np.testing.assert_allclose(s4tf.gradient(x, of=lambda a: s4tf.exp(a).sum()).numpy(),
                               np.exp(x.numpy()), rtol=1e-6)
    assert s4tf.derivative(0.5, of=lambda a: s4tf.sin(a)) == pytest.approx(np.cos(0.5))


def test_a_rule_must_be_a_table_of_one_rule_per_argument():
    from s4tf.ops.primitive import primitive

    with pytest.raises(TypeError, match=r"vjp=\(rule,\) for one argument"):
        primitive("neg", vjp=lambda g, x, out: -g)
    with pytest.raises(TypeError, match="jvp must be a rule table"):
        primitive("neg", jvp=[lambda t, x, out: -t])


def test_forward_mode_through_concat_adds_each_tangent_into_one_buffer(monkeypatch):
    # concat's jvp is one rule per argument (its slice of the output); the k shares
    # go into one buffer in place, not k dense concatenations.
    from s4tf.backends.naive.backend import BACKEND

    calls = []
    real = BACKEND.index_add_inplace
    monkeypatch.setattr(BACKEND, "index_add_inplace",
                        lambda dst, index, src, axis=None: calls.append(index) or real(dst, index, src, axis))
    k = 6
    x = s4tf.Tensor(np.arange(3.0, dtype=np.float32))
    value, tangent = s4tf.value_with_differential(
        x, of=lambda t: s4tf.concat([t * float(i) for i in range(k)], axis=0))
    got = tangent(s4tf.ones([3]))
    np.testing.assert_allclose(got.numpy(), np.repeat(np.arange(k, dtype=np.float32), 3))
    assert len(calls) == k
    # And through stack (concat of expand_dims), against finite differences.
    from s4tf.testing import check_gradients

    check_gradients(lambda t: s4tf.stack([t, t * t, s4tf.sin(t)], axis=1), x.astype(s4tf.float64))


def test_python_numbers_in_the_general_path_take_the_result_dtype():
    cond = s4tf.Tensor([True, False])
    # Beside a float16 tensor a number stays weak; with no promoted tensor it is float32;
    # beside a NumPy float64 array it is float64; bfloat16 keeps its dtype too.
    assert s4tf.where(cond, s4tf.ones([2], dtype=s4tf.float16), 0.5).dtype == s4tf.float16
    assert s4tf.where(cond, 0.0, 1.0).dtype == s4tf.float32
    assert s4tf.where(cond, np.ones(2), 0.5).dtype == s4tf.float64
    assert s4tf.where(cond, s4tf.ones([2], dtype=s4tf.bfloat16), 0.5).dtype == s4tf.bfloat16
    from s4tf.ops.primitive import primitive

    # Only Python numbers, no scalar rule: computed on the current backend as float32.
    plain = primitive("add", promote=True)
    out = plain(1.5, 2.0)
    assert isinstance(out, s4tf.Tensor) and out.dtype == s4tf.float32 and out.item() == 3.5


def test_a_primitive_is_documented_where_it_is_defined_and_stays_unbound_on_a_class():
    import inspect

    from s4tf.ops.primitive import primitive

    scaled = primitive("pow_scalar", signature="x, *, exponent=2.0", doc="``x ** exponent``.")
    assert (scaled.__name__, scaled.__module__, scaled.__doc__) == (
        "pow_scalar", __name__, "``x ** exponent``.")
    assert str(inspect.signature(scaled)) == "(x, *, exponent=2.0)"
    assert inspect.isroutine(scaled)  # what pydoc, doctest and griffe ask

    class Holder:
        op = s4tf.exp

    assert Holder().op is s4tf.exp and Holder.op(s4tf.Tensor([0.0])).tolist() == [1.0]


@pytest.mark.parametrize("signature, found", [("x, **params", r"\*\*"), ("x, /, y", "/"),
                                              ("x y", "invalid syntax")])
def test_a_signature_a_primitive_cannot_take_is_refused_at_definition(signature, found):
    from s4tf.ops.primitive import primitive

    with pytest.raises(ValueError, match=rf"primitive 'exp': signature={re.escape(repr(signature))} "
                                         rf"is not a parameter list .*found: {found}"):
        primitive("exp", signature=signature)
