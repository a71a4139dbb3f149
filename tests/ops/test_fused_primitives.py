"""Fused primitives: ReLU and a dense layer's ``x @ w + b`` (s4tf/ops/elementwise.py,
s4tf/ops/linalg.py), and the transposed products matmul's cotangents use (``matmul_nt``,
``matmul_tn``): the composites' values to the bit, derivatives of first and second
order in both modes on every backend, and one recorded op where there were two."""

import numpy as np
import pytest

import s4tf
from s4tf import layers
from s4tf.ops.elementwise import gelu_grad, relu_grad
from s4tf.ops.layer_norm import backprop_ as layer_norm_backprop
from s4tf.ops.layer_norm import layer_norm
from s4tf.ops.linalg import dense_, matmul_nt, matmul_tn
from s4tf.testing import check_gradients

# One test line runs many different graphs on purpose: not a recompilation problem.
pytestmark = pytest.mark.filterwarnings("ignore::s4tf.xla.RecompilationWarning")

RNG = np.random.default_rng(3)
SPECIAL = np.array([-0.0, 0.0, np.nan, -np.inf, np.inf, -1.5, 2.5, 1e-30, -1e-30])


def _bits(t):
    array = t.numpy()
    return array.view(f"u{array.dtype.itemsize}")


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_relu_gives_the_bits_of_the_select_it_replaces(backend, dtype):
    # where(x > 0, x, 0.0): NaN and -0.0 give +0.0. Large arrays take the naive
    # backend's branch-free paths, small ones NumPy's select.
    for values in (SPECIAL, RNG.normal(size=10_000)):
        x = s4tf.Tensor(values).astype(dtype)
        got, want = s4tf.relu(x), s4tf.where(x > 0, x, 0.0)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(_bits(got), _bits(want))
        g = s4tf.Tensor(RNG.normal(size=values.shape)).astype(dtype)
        np.testing.assert_array_equal(_bits(relu_grad(-g, x)), _bits(s4tf.where(x > 0, -g, 0.0)))


def test_relu_of_ints_bools_and_python_numbers_is_as_before(backend):
    assert s4tf.relu(s4tf.Tensor([-2, 3])).dtype == s4tf.float32
    assert s4tf.relu(s4tf.Tensor([-2, 3])).tolist() == [0.0, 3.0]
    assert s4tf.relu(s4tf.Tensor([True, False])).tolist() == [1.0, 0.0]
    assert s4tf.relu(3) == 3 and s4tf.relu(-3.0) == 0.0 and s4tf.relu(float("nan")) == 0.0
    assert s4tf.gradient(2.0, of=s4tf.relu) == 1.0
    assert s4tf.gradient(0.0, of=s4tf.relu) == 0.0


def test_relu_derivatives_first_and_second_order(backend):
    x = s4tf.Tensor([-2.2, -0.7, 0.3, 1.9, 4.1], dtype=s4tf.float64)  # away from the kink
    check_gradients(s4tf.relu, x, order=2)
    # The pullback as a function of the cotangent and of the point: relu_grad's own rules.
    check_gradients(lambda g, x: relu_grad(g * g, x), x * 0.5, x, order=2)
    # At the kink the derivative is 0 (S4TF's convention), and so is the second.
    zero = s4tf.Tensor([0.0, 1.0], dtype=s4tf.float64)
    assert s4tf.gradient(zero, of=lambda t: s4tf.relu(t).sum()).tolist() == [0.0, 1.0]
    second = s4tf.gradient(zero, of=lambda t: s4tf.gradient(t, of=lambda u: (s4tf.relu(u) ** 2).sum()).sum())
    assert second.tolist() == [0.0, 2.0]
    assert s4tf.derivative(1.5, of=s4tf.relu) == 1.0


def _composite_gelu(x):
    inner = (x + x * x * x * 0.044715) * (2.0 / np.pi) ** 0.5
    return x * (s4tf.tanh(inner) + 1.0) * 0.5


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_gelu_gives_the_bits_of_the_composite_it_replaces(backend, dtype):
    for values in (SPECIAL, RNG.normal(size=1000) * 4):
        x = s4tf.Tensor(values).astype(dtype)
        got, want = s4tf.gelu(x), _composite_gelu(x)
        assert got.dtype == want.dtype
        if dtype == "float16":
            # naive computes float16 ops in float32 and rounds each result back: the
            # fused op rounds once, the composite after every op, so the last bit may differ.
            np.testing.assert_allclose(got.numpy().astype(np.float64),
                                       want.numpy().astype(np.float64), rtol=2e-3, atol=2e-3)
        else:
            np.testing.assert_array_equal(_bits(got), _bits(want))
    ints = s4tf.Tensor([-2, 0, 3])
    assert s4tf.gelu(ints).dtype == s4tf.float32
    np.testing.assert_array_equal(s4tf.gelu(ints).numpy(), _composite_gelu(ints).numpy())
    assert s4tf.gelu(1.5) == _composite_gelu(1.5)


def test_gelu_gradient_matches_the_composite_and_is_twice_differentiable(backend):
    x = s4tf.Tensor(RNG.normal(size=(4, 5)) * 3, dtype=s4tf.float64)
    got = s4tf.gradient(x, of=lambda t: (s4tf.gelu(t) * t).sum())
    want = s4tf.gradient(x, of=lambda t: (_composite_gelu(t) * t).sum())
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-13, atol=1e-15)
    check_gradients(s4tf.gelu, x, order=2)
    check_gradients(lambda g, x: gelu_grad(g * g, x), x * 0.5, x, order=2)


def _dense_inputs(dtype=s4tf.float64):
    x = s4tf.Tensor(RNG.normal(size=(3, 4)), dtype=dtype)
    w = s4tf.Tensor(RNG.normal(size=(4, 5)), dtype=dtype)
    b = s4tf.Tensor(RNG.normal(size=(5,)), dtype=dtype)
    return x, w, b


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dense_gives_the_bits_of_matmul_plus_bias(backend, dtype):
    x, w, b = _dense_inputs(s4tf.dtypes.as_dtype(dtype))
    np.testing.assert_array_equal(_bits(dense_(x, w, b)), _bits(x @ w + b))
    grads = s4tf.gradient(x, w, b, of=lambda x, w, b: (dense_(x, w, b) ** 2).sum())
    want = s4tf.gradient(x, w, b, of=lambda x, w, b: ((x @ w + b) ** 2).sum())
    for got, expected in zip(grads, want, strict=True):
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)


def test_dense_derivatives_first_and_second_order(backend):
    x, w, b = _dense_inputs()
    check_gradients(dense_, x, w, b, order=2)
    check_gradients(lambda x, w, b: s4tf.tanh(dense_(x, w, b)), x, w, b, order=2)
    one_row = s4tf.Tensor(RNG.normal(size=(1, 4)))  # a batch of one: the bias's sum is a reshape
    check_gradients(dense_, one_row, w, b, order=2)


def _recorded_ops(fn, *points, monkeypatch):
    """The primitives the outermost reverse trace of ``gradient(*points, of=fn)`` handled."""
    from s4tf.autodiff.reverse import ReverseTrace

    recorded = []
    process, process_binary = ReverseTrace.process, ReverseTrace.process_binary

    def spy(self, primitive, args, params):
        recorded.append(primitive.name)
        return process(self, primitive, args, params)

    def spy_binary(self, primitive, x, y):
        recorded.append(primitive.name)
        return process_binary(self, primitive, x, y)

    with monkeypatch.context() as patch:
        patch.setattr(ReverseTrace, "process", spy)
        patch.setattr(ReverseTrace, "process_binary", spy_binary)
        s4tf.gradient(*points, of=fn)
    return recorded


def test_a_dense_layer_with_relu_records_two_ops(monkeypatch):
    model = layers.Dense(4, 5, activation=s4tf.relu, dtype=s4tf.float64)
    x = s4tf.Tensor(RNG.normal(size=(3, 4)))
    recorded = _recorded_ops(lambda m: m(x).sum(), model, monkeypatch=monkeypatch)
    assert recorded == ["dense", "relu", "reduce_sum"]


def test_dense_layers_keep_the_composite_when_the_bias_dtype_differs(backend):
    # A bias of another dtype: the product stays in the weight's dtype, then the
    # sum is promoted, as before (one fused op would promote the product too).
    model = layers.Dense(4, 5, dtype=s4tf.float32)
    model = s4tf.replace(model, bias=s4tf.Tensor(RNG.normal(size=(5,))))  # float64
    x = s4tf.Tensor(RNG.normal(size=(3, 4)), dtype=s4tf.float32)
    np.testing.assert_array_equal(model(x).numpy(), (x @ model.weight + model.bias).numpy())
    assert model(x).dtype == s4tf.float64


@pytest.mark.parametrize("shape", [(4,), (2, 3, 4)])
def test_dense_layers_fold_other_ranks_into_rows(backend, shape):
    model = layers.Dense(4, 5, activation=s4tf.relu, dtype=s4tf.float64)
    model = s4tf.replace(model, bias=s4tf.Tensor(RNG.normal(size=(5,))))
    x = s4tf.Tensor(RNG.normal(size=shape))
    want = s4tf.relu(x.reshape(-1, 4) @ model.weight + model.bias).reshape(*shape[:-1], 5)
    np.testing.assert_array_equal(model(x).numpy(), want.numpy())
    check_gradients(lambda m, x: m(x), model, x)


@pytest.mark.parametrize("x_shape, y_shape", [((3, 4), (5, 4)), ((2, 3, 4), (5, 4)), ((2, 3, 4), (2, 5, 4))])
def test_transposed_products_are_matmuls_of_a_transpose(backend, x_shape, y_shape):
    x = s4tf.Tensor(RNG.normal(size=x_shape))
    y = s4tf.Tensor(RNG.normal(size=y_shape))
    swap = lambda t: t.transpose(*range(t.rank - 2), t.rank - 1, t.rank - 2)  # noqa: E731
    # Both are x @ y^T: matmul_nt of x and y, matmul_tn of x^T and y^T.
    np.testing.assert_array_equal(_bits(matmul_nt(x, y)), _bits(x @ swap(y)))
    np.testing.assert_array_equal(_bits(matmul_tn(swap(x), swap(y))), _bits(x @ swap(y)))
    check_gradients(matmul_nt, x, y, order=2)
    check_gradients(matmul_tn, swap(x), swap(y), order=2)


def test_a_matmul_pullback_records_no_transpose(monkeypatch):
    x, w, _ = _dense_inputs()
    seed = s4tf.ones([3, 5], dtype=s4tf.float64)

    def pulled_back(x, w):  # the backward pass of x @ w, differentiated: what it ran
        dx, dw = s4tf.pullback(x, w, of=lambda a, b: a @ b)(seed)
        return dx.sum() + dw.sum()

    recorded = _recorded_ops(pulled_back, x, w, monkeypatch=monkeypatch)
    assert "matmul_nt" in recorded and "matmul_tn" in recorded and "transpose" not in recorded


def test_gelu_is_one_recorded_op(monkeypatch):
    # The composite recorded nine ops (x*x*x, the scalings, tanh, the adds).
    x = s4tf.Tensor(RNG.normal(size=(3, 4)))
    recorded = _recorded_ops(lambda t: s4tf.gelu(t).sum(), x, monkeypatch=monkeypatch)
    assert [name for name in recorded if name != "reduce_sum"] == ["gelu"]


def _composite_layer_norm(x, scale, offset, epsilon):
    mean = x.mean(axis=-1, keepdims=True)
    centered = x - mean
    variance = (centered * centered).mean(axis=-1, keepdims=True)
    return centered * s4tf.rsqrt(variance + epsilon) * scale + offset


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layer_norm_gives_the_values_of_the_composite_it_replaces(backend, dtype):
    dtype = s4tf.dtypes.as_dtype(dtype)
    x = s4tf.Tensor(RNG.normal(size=(3, 4, 8)) * 3 + 1, dtype=dtype)
    scale, offset = (s4tf.Tensor(RNG.normal(size=8), dtype=dtype) for _ in range(2))
    np.testing.assert_array_equal(_bits(layer_norm(x, scale, offset, epsilon=1e-5)),
                                  _bits(_composite_layer_norm(x, scale, offset, 1e-5)))
    layer = s4tf.replace(layers.LayerNorm(8, epsilon=1e-5, dtype=dtype), scale=scale, offset=offset)
    np.testing.assert_array_equal(_bits(layer(x)), _bits(_composite_layer_norm(x, scale, offset, 1e-5)))
    got = s4tf.gradient(x, scale, offset, of=lambda x, s, b: (layer_norm(x, s, b, epsilon=1e-5) * x).sum())
    want = s4tf.gradient(x, scale, offset,
                         of=lambda x, s, b: (_composite_layer_norm(x, s, b, 1e-5) * x).sum())
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5 if dtype == s4tf.float32 else 1e-12,
                                   atol=1e-5 if dtype == s4tf.float32 else 1e-12)


def test_layer_norm_derivatives_first_and_second_order(backend):
    x = s4tf.Tensor(RNG.normal(size=(2, 5)), dtype=s4tf.float64)
    scale, offset = (s4tf.Tensor(RNG.normal(size=5), dtype=s4tf.float64) for _ in range(2))
    check_gradients(lambda x, s, b: layer_norm(x, s, b, epsilon=1e-3), x, scale, offset, order=2)
    check_gradients(lambda g, x, s: layer_norm_backprop(g * g, x, s, epsilon=1e-3), x * 0.5, x, scale,
                    order=2)
    with pytest.raises(ValueError, match="scale and offset must have shape"):
        layer_norm(x, scale[:3], offset)


def test_layer_norm_layer_records_one_op(monkeypatch):
    # The composite recorded some eight ops (two means, the centering, rsqrt, ...).
    layer = layers.LayerNorm(4)
    x = s4tf.Tensor(RNG.normal(size=(3, 4)))
    recorded = _recorded_ops(lambda m: m(x).sum(), layer, monkeypatch=monkeypatch)
    assert [name for name in recorded if name != "reduce_sum"] == ["layer_norm"]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "float64"])
def test_mean_is_one_recorded_op_with_the_bits_of_the_sum_divided(monkeypatch, dtype):
    # It recorded a reduce_sum and a div; on the naive backend its kernel and its
    # pullback run those two kernels in the same order, so nothing changes to the bit.
    # float16 and bfloat16 are summed and divided in float32 and rounded once (as
    # jnp.mean and PyTorch do), so their reference is the float32 composite.
    low = dtype in ("bfloat16", "float16")
    x = s4tf.Tensor(RNG.normal(size=(5, 7, 3)) * 3).astype(dtype)
    recorded = _recorded_ops(lambda t: t.mean(axis=(0, 2)).sum(), x, monkeypatch=monkeypatch)
    assert [name for name in recorded if name != "reduce_sum"] == ["reduce_mean"]
    weights = s4tf.Tensor(RNG.normal(size=7)).astype(dtype)
    for axis, keepdims, count in [(None, False, 105), ((0, 2), False, 15), (1, True, 7)]:
        def mean(t, axis=axis, keepdims=keepdims):
            return t.mean(axis=axis, keepdims=keepdims)

        def composite(t, axis=axis, keepdims=keepdims, count=count):
            return t.sum(axis=axis, keepdims=keepdims) / float(count)

        want = composite(x.astype("float32")).astype(dtype) if low else composite(x)
        np.testing.assert_array_equal(_bits(mean(x)), _bits(want))
        got = s4tf.gradient(x, of=lambda t, f=mean: (f(t) * weights[:1]).sum())
        want = s4tf.gradient(x, of=lambda t, f=composite: (f(t) * weights[:1]).sum())
        np.testing.assert_array_equal(_bits(got), _bits(want))
    # A count bfloat16 cannot hold (257 rounds to 256 there) divides as before too.
    wide = s4tf.Tensor(RNG.normal(size=(2, 257))).astype(dtype)
    want = (wide.astype("float32").sum(axis=1) / 257.0).astype(dtype) if low else (
        wide.sum(axis=1) / 257.0)
    np.testing.assert_array_equal(_bits(wide.mean(axis=1)), _bits(want))
    # Ints, bools and Python numbers keep the sum and the division (a float32 mean).
    assert s4tf.Tensor([1, 2, 4]).mean().dtype == s4tf.float32
    assert s4tf.Tensor([True, False]).mean().item() == 0.5
    assert s4tf.gradient(3.0, of=lambda t: s4tf.ops.mean(t * t)) == 6.0


def test_a_float16_mean_does_not_overflow_where_its_sum_would(backend):
    # 10,000 tens sum to 100,000: past float16's 65,504; the mean is 10.
    x = s4tf.Tensor(np.full((100, 100), 10.0, np.float32)).astype("float16")
    assert float(x.mean().astype("float32").item()) == 10.0
    np.testing.assert_array_equal(np.asarray(x.mean(axis=0).astype("float32")), np.full(100, 10.0))
    assert float(s4tf.ops.variance(x).astype("float32").item()) == 0.0
