"""TensorBuffer: NumPy's in-place idioms over immutable tensors, on every backend."""

import numpy as np
import pytest

import s4tf
from s4tf.optimizers.tensor_buffers import TensorBuffer

RNG = np.random.default_rng(0)
X = RNG.uniform(0.5, 2.0, size=(3, 4)).astype(np.float32)
Y = RNG.normal(size=(3, 4)).astype(np.float32)


def buf(array):
    return TensorBuffer(s4tf.Tensor(array))


UNARY = [np.sqrt, np.square, np.abs, np.sign, np.negative, np.exp, np.log]
BINARY = [np.add, np.subtract, np.multiply, np.divide, np.maximum, np.minimum, np.power]


# Each test builds all its results before reading any: on xla one graph, one compile.
def test_unary_ufuncs_match_numpy(backend):
    x = buf(X)
    outs = [(f, f(x, out=np.empty_like(x)), f(x)) for f in UNARY]
    s4tf.barrier()
    for f, written, returned in outs:
        np.testing.assert_allclose(written.numpy(), f(X), rtol=1e-6, err_msg=f.__name__)
        np.testing.assert_allclose(returned.numpy(), f(X), rtol=1e-6, err_msg=f.__name__)
        assert written.tensor.backend == backend and written.tensor.dtype == s4tf.float32


def test_binary_ufuncs_match_numpy_with_buffers_and_weak_scalars(backend):
    x, y = buf(X), buf(Y)
    cases = []
    for f in BINARY:
        cases.append((f, f(x, y, out=np.empty_like(x)), f(X, Y)))
        # A Python (or NumPy float64) scalar does not promote the float32 buffer.
        cases.append((f, f(x, np.float64(0.5), out=np.empty_like(x)), f(X, np.float32(0.5))))
        cases.append((f, f(2.0, x), f(np.float32(2.0), X)))
    s4tf.barrier()
    for f, got, want in cases:
        assert got.tensor.dtype == s4tf.float32, f.__name__
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, err_msg=f.__name__)


def test_in_place_operators_rebind_and_never_write_the_old_tensor(backend):
    original = s4tf.Tensor(X)
    x = TensorBuffer(original)
    alias = x
    x += 1.0
    x -= buf(Y)
    x *= 2.0
    x /= 4.0
    assert alias is x
    np.testing.assert_allclose(x.numpy(), (X + 1 - Y) * 2 / 4, rtol=1e-6)
    np.testing.assert_array_equal(original.numpy(), X)  # immutable: still the old values


def test_arithmetic_operators_make_new_buffers(backend):
    x, y = buf(X), buf(Y)
    expressions = [(x + y, X + Y), (1.0 - x, 1 - X), (x * 3.0, X * 3), (2.0 / x, 2 / X),
                   (-x, -X), (y / x, Y / X), (3.0 + x, 3 + X), (x - 1.0, X - 1), (2.0 * y, 2 * Y)]
    s4tf.barrier()
    for got, want in expressions:
        assert isinstance(got, TensorBuffer) and got is not x
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    np.testing.assert_array_equal(x.numpy(), X)


def test_out_keeps_its_dtype_and_shape(backend):
    out = TensorBuffer(s4tf.zeros([3, 4], dtype=s4tf.float32))
    wide = TensorBuffer(s4tf.Tensor(X.astype(np.float64)))
    np.multiply(wide, 2.0, out=out)
    assert out.tensor.dtype == s4tf.float32
    np.testing.assert_allclose(out.numpy(), X * 2, rtol=1e-6)
    np.add(buf(np.ones(4, np.float32)), 1.0, out=out)  # broadcast into out's shape
    assert out.shape == (3, 4) and out.tensor.shape == (3, 4)
    np.testing.assert_array_equal(out.numpy(), np.full((3, 4), 2.0))
    with pytest.raises(ValueError, match=r"shape \(3, 4\) into a buffer of shape \(4,\)"):
        np.add(buf(X), 1.0, out=buf(np.ones(4, np.float32)))


def test_array_functions(backend):
    x = buf(X)
    zeros, ones, full = np.zeros_like(x), np.ones_like(x), np.full_like(x, 7.0)
    assert [b.tensor.backend for b in (zeros, ones, full)] == [backend] * 3
    np.testing.assert_array_equal(zeros.numpy() + ones.numpy() + full.numpy(), np.full((3, 4), 8.0))
    target = np.empty_like(x, dtype=np.float64)
    np.copyto(target, x)
    assert target.tensor.dtype == s4tf.float64
    np.testing.assert_allclose(target.numpy(), X, rtol=1e-7)
    target[...] = 0.5
    np.testing.assert_array_equal(target.numpy(), np.full((3, 4), 0.5))


def test_reading_an_unset_buffer_raises():
    scratch = np.empty_like(buf(X))
    with pytest.raises(ValueError, match="np.empty_like and was read before anything was written"):
        scratch += 1.0
    np.copyto(scratch, 1.0)
    assert scratch.numpy().sum() == 12.0


def test_unsupported_operations_name_themselves_and_the_supported_ones():
    x = buf(X)
    with pytest.raises(TypeError, match=r"np\.arctan; .*np\.add, np\.subtract, np\.multiply"):
        np.arctan(x)
    with pytest.raises(TypeError, match=r"np\.add\.reduce"):
        np.add.reduce(x)
    with pytest.raises(TypeError, match=r"np\.clip; .*np\.empty_like, np\.zeros_like"):
        np.clip(x, 0, 1)
    with pytest.raises(TypeError, match=r"unsupported keyword arguments \['where'\]"):
        np.add(x, 1.0, out=x, where=True)
    with pytest.raises(TypeError, match="only be written into a TensorBuffer"):
        np.add(x, 1.0, out=np.empty((3, 4), np.float32))
    with pytest.raises(TypeError, match="cannot be turned into a NumPy array"):
        np.asarray(x)
    with pytest.raises(TypeError, match=r"only whole-buffer assignment"):
        x[0] = 1.0
    with pytest.raises(TypeError, match="cannot use a str as an operand"):
        x += "1"


def test_a_changing_learning_rate_does_not_recompile_on_xla():
    pytest.importorskip("jax")
    with s4tf.backend("xla"):
        param = buf(X)
        s4tf.xla.reset_metrics()
        for lr in (0.1, 0.2, 0.3):
            step = np.multiply(buf(Y), lr, out=np.empty_like(param))
            param -= step
            param.numpy()
        metrics = s4tf.xla.metrics()
    assert (metrics["compiles"], metrics["cache_hits"]) == (1, 2)
    np.testing.assert_allclose(param.numpy(), X - 0.6 * Y, rtol=1e-5)
